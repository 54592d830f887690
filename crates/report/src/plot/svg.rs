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
    body: String,
}

impl Svg {
    /// An empty figure of `width` × `height` px with a white background.
    pub fn new(width: f64, height: f64) -> Svg {
        let mut s = Svg {
            width,
            height,
            body: String::new(),
        };
        s.rect(0.0, 0.0, width, height, "#ffffff", None);
        s
    }

    /// A filled rectangle, with a tooltip when `title` is given.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, title: Option<&str>) {
        let _ = write!(
            self.body,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"",
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0)),
            escape(fill)
        );
        match title {
            Some(t) => {
                let _ = writeln!(self.body, "><title>{}</title></rect>", escape(t));
            }
            None => self.body.push_str("/>\n"),
        }
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

    /// The finished document.
    pub fn finish(self) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\">\n{}</svg>\n",
            self.body,
            w = num(self.width),
            h = num(self.height),
        )
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
