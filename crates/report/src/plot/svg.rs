//! A small SVG writer: just the elements oscost's figures use, every coordinate printed with
//! one decimal and every text escaped, so the same figure is the same bytes everywhere.

use std::fmt::Write as _;

/// Escapes text for an XML text node or attribute value.
pub fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&apos;"),
            // Characters XML 1.0 does not allow at all are left out.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => s.push(c),
        }
    }
    s
}

/// A coordinate or length: one decimal, no `-0.0`.
fn num(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let s = format!("{v:.1}");
    if s == "-0.0" {
        "0.0".into()
    } else {
        s
    }
}

/// Text anchors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// Text begins at the point.
    Start,
    /// Text is centred on the point.
    Middle,
    /// Text ends at the point.
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// An SVG document being written.
pub struct Svg {
    width: f64,
    height: f64,
    title: Option<String>,
    body: String,
}

/// How a shape is painted: fill, outline and their opacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paint<'a> {
    /// Fill colour, or `none`.
    pub fill: &'a str,
    /// Outline colour, or `none`.
    pub stroke: &'a str,
    /// Outline width, px.
    pub stroke_width: f64,
    /// Opacity of the fill, 0 to 1.
    pub fill_opacity: f64,
}

impl<'a> Paint<'a> {
    /// Filled, no outline.
    pub fn fill(colour: &'a str) -> Paint<'a> {
        Paint {
            fill: colour,
            stroke: "none",
            stroke_width: 0.0,
            fill_opacity: 1.0,
        }
    }

    /// Outlined, no fill.
    pub fn outline(colour: &'a str, width: f64) -> Paint<'a> {
        Paint {
            fill: "none",
            stroke: colour,
            stroke_width: width,
            fill_opacity: 1.0,
        }
    }

    fn attrs(&self) -> String {
        let mut a = format!(" fill=\"{}\"", escape(self.fill));
        if self.fill_opacity < 1.0 {
            let _ = write!(a, " fill-opacity=\"{:.2}\"", self.fill_opacity.max(0.0));
        }
        if self.stroke != "none" {
            let _ = write!(
                a,
                " stroke=\"{}\" stroke-width=\"{}\"",
                escape(self.stroke),
                num(self.stroke_width)
            );
        }
        a
    }
}

impl Svg {
    /// An empty figure of `width` × `height` px with a white background.
    pub fn new(width: f64, height: f64) -> Svg {
        let mut s = Svg {
            width,
            height,
            title: None,
            body: String::new(),
        };
        s.rect(0.0, 0.0, width, height, "#ffffff", None);
        s
    }

    /// A filled rectangle, with a tooltip when `title` is given.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, title: Option<&str>) {
        self.painted_rect((x, y), (w, h), Paint::fill(fill), title);
    }

    /// Horizontal grid lines at `ticks` (data values, drawn at `y(value)`) labelled left of
    /// the plot area at (`left`, `top`) of size `w` × `h`, then its left and bottom axes.
    pub fn grid_and_frame(
        &mut self,
        (left, top): (f64, f64),
        (w, h): (f64, f64),
        ticks: &[f64],
        y: impl Fn(f64) -> f64,
    ) {
        let step = ticks.get(1).copied().unwrap_or(1.0);
        for &v in ticks {
            self.line(left, y(v), left + w, y(v), "#e6e6e6", 1.0);
            self.text(
                left - 6.0,
                y(v) + 4.0,
                11.0,
                Anchor::End,
                0.0,
                &tick_label(v, step),
            );
        }
        self.line(left, top, left, top + h, "#000000", 1.0);
        self.line(left, top + h, left + w, top + h, "#000000", 1.0);
    }

    /// A straight line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, width: f64) {
        let _ = writeln!(
            self.body,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"/>",
            num(x1),
            num(y1),
            num(x2),
            num(y2),
            escape(stroke),
            num(width)
        );
    }

    /// An open polyline through `points`, with a tooltip.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, width: f64, title: &str) {
        let pts: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{},{}", num(x), num(y)))
            .collect();
        let _ = writeln!(
            self.body,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" \
             stroke-linejoin=\"round\"><title>{}</title></polyline>",
            pts.join(" "),
            escape(stroke),
            num(width),
            escape(title)
        );
    }

    /// Text at a point, `size` px, optionally turned by `rotate` degrees about the point.
    pub fn text(&mut self, x: f64, y: f64, size: f64, anchor: Anchor, rotate: f64, text: &str) {
        let turn = if rotate == 0.0 {
            String::new()
        } else {
            format!(
                " transform=\"rotate({} {} {})\"",
                num(rotate),
                num(x),
                num(y)
            )
        };
        let _ = writeln!(
            self.body,
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\"{turn}>{}</text>",
            num(x),
            num(y),
            num(size),
            anchor.name(),
            escape(text)
        );
    }

    /// Names the whole figure, for screen readers and as the tooltip of its background.
    pub fn set_title(&mut self, title: &str) {
        self.title = Some(title.to_owned());
    }

    /// A line with a dash pattern (`"6 3"`; empty for a solid line).
    pub fn dashed_line(
        &mut self,
        (x1, y1): (f64, f64),
        (x2, y2): (f64, f64),
        stroke: &str,
        width: f64,
        dash: &str,
    ) {
        let _ = writeln!(
            self.body,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>",
            num(x1),
            num(y1),
            num(x2),
            num(y2),
            escape(stroke),
            num(width),
            dash_attr(dash)
        );
    }

    /// An open polyline with a dash pattern (empty: solid) and a tooltip.
    pub fn styled_polyline(
        &mut self,
        points: &[(f64, f64)],
        stroke: &str,
        width: f64,
        dash: &str,
        title: &str,
    ) {
        let pts: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{},{}", num(x), num(y)))
            .collect();
        let _ = writeln!(
            self.body,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{} \
             stroke-linejoin=\"round\"><title>{}</title></polyline>",
            pts.join(" "),
            escape(stroke),
            num(width),
            dash_attr(dash),
            escape(title)
        );
    }

    /// A rectangle painted with `paint`, with a tooltip when `title` is given.
    pub fn painted_rect(
        &mut self,
        (x, y): (f64, f64),
        (w, h): (f64, f64),
        paint: Paint,
        title: Option<&str>,
    ) {
        let _ = write!(
            self.body,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{}",
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0)),
            paint.attrs()
        );
        self.close(title, "rect");
    }

    /// A circle painted with `paint`, with a tooltip when `title` is given.
    pub fn circle(&mut self, (cx, cy): (f64, f64), r: f64, paint: Paint, title: Option<&str>) {
        let _ = write!(
            self.body,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\"{}",
            num(cx),
            num(cy),
            num(r),
            paint.attrs()
        );
        self.close(title, "circle");
    }

    /// A closed polygon painted with `paint`, with a tooltip when `title` is given.
    pub fn polygon(&mut self, points: &[(f64, f64)], paint: Paint, title: Option<&str>) {
        let pts: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{},{}", num(x), num(y)))
            .collect();
        let _ = write!(
            self.body,
            "<polygon points=\"{}\"{}",
            pts.join(" "),
            paint.attrs()
        );
        self.close(title, "polygon");
    }

    /// Text as [`Svg::text`], in bold and/or a colour other than black.
    pub fn styled_text(
        &mut self,
        (x, y): (f64, f64),
        size: f64,
        anchor: Anchor,
        bold: bool,
        fill: &str,
        text: &str,
    ) {
        let weight = if bold { " font-weight=\"bold\"" } else { "" };
        let colour = if fill == "#000000" {
            String::new()
        } else {
            format!(" fill=\"{}\"", escape(fill))
        };
        let _ = writeln!(
            self.body,
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\"{weight}{colour}>{}</text>",
            num(x),
            num(y),
            num(size),
            anchor.name(),
            escape(text)
        );
    }

    fn close(&mut self, title: Option<&str>, element: &str) {
        match title {
            Some(t) => {
                let _ = writeln!(self.body, "><title>{}</title></{element}>", escape(t));
            }
            None => self.body.push_str("/>\n"),
        }
    }

    /// The finished document.
    pub fn finish(self) -> String {
        let title = self
            .title
            .as_deref()
            .map(|t| format!("<title>{}</title>\n", escape(t)))
            .unwrap_or_default();
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\">\n{title}{}</svg>\n",
            self.body,
            w = num(self.width),
            h = num(self.height),
        )
    }
}

fn dash_attr(dash: &str) -> String {
    if dash.is_empty() {
        String::new()
    } else {
        format!(" stroke-dasharray=\"{}\"", escape(dash))
    }
}

/// Tick positions for an axis from 0 to `max`: steps of 1, 2 or 5 times a power of ten, about
/// `want` of them.
pub fn ticks(max: f64, want: usize) -> Vec<f64> {
    if !(max.is_finite() && max > 0.0) {
        return vec![0.0];
    }
    let rough = max / want.max(1) as f64;
    let mag = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * mag);
    (0..)
        .map(|k| k as f64 * step)
        .take_while(|v| *v <= max * (1.0 + 1e-9))
        .collect()
}

/// A tick label: as few decimals as the step needs.
pub fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_numbers_are_fixed() {
        let mut s = Svg::new(10.0, 10.0);
        s.text(1.0, 2.0, 12.0, Anchor::Start, 0.0, "a<b & \"c\" 'd' \u{1}");
        let doc = s.finish();
        assert!(
            doc.contains(">a&lt;b &amp; &quot;c&quot; &apos;d&apos; </text>"),
            "{doc}"
        );
        assert_eq!(num(-0.04), "0.0");
        assert_eq!(num(f64::NAN), "0.0");
    }

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(ticks(10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(97.0, 6), vec![0.0, 20.0, 40.0, 60.0, 80.0]);
        assert_eq!(ticks(0.0, 5), vec![0.0]);
        assert_eq!(tick_label(0.5, 0.5), "0.5");
        assert_eq!(tick_label(40.0, 20.0), "40");
    }
}
