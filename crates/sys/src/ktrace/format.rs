//! A tracepoint's record layout, as tracefs states it in `events/<sys>/<event>/format`.

/// One field of a tracepoint's record, as its format file states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field's name (`prev_pid`).
    pub name: String,
    /// Byte offset in the raw record.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Whether the value is signed.
    pub signed: bool,
    /// A `__data_loc` string: the field holds its offset (low 16 bits) and length.
    pub data_loc: bool,
    /// A fixed `char[N]` string.
    pub chars: bool,
}

/// A tracepoint's id and fields, from tracefs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    /// `sys:event`.
    pub name: String,
    /// The id perf knows it by (and the `common_type` of its records).
    pub id: u64,
    /// Its fields, the common ones included.
    pub fields: Vec<Field>,
}

/// Parses a tracefs `format` file.
pub fn parse_format(sys: &str, text: &str) -> Option<Format> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(n) = line.strip_prefix("name:") {
            name = Some(format!("{sys}:{}", n.trim()));
        } else if let Some(n) = line.strip_prefix("ID:") {
            id = n.trim().parse().ok();
        } else if let Some(rest) = line.strip_prefix("field:") {
            let mut parts = rest.split(';').map(str::trim);
            let decl = parts.next()?;
            let mut offset = None;
            let mut size = None;
            let mut signed = false;
            for p in parts {
                if let Some(v) = p.strip_prefix("offset:") {
                    offset = v.parse().ok();
                } else if let Some(v) = p.strip_prefix("size:") {
                    size = v.parse().ok();
                } else if let Some(v) = p.strip_prefix("signed:") {
                    signed = v == "1";
                }
            }
            let data_loc = decl.starts_with("__data_loc");
            let chars = !data_loc && decl.contains('[') && decl.contains("char");
            // The name is the last word once array sizes are dropped: `char comm[16]`,
            // `__data_loc char[] name`.
            let mut bare = String::new();
            let mut depth = 0;
            for ch in decl.chars() {
                match ch {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ if depth == 0 => bare.push(ch),
                    _ => {}
                }
            }
            let fname = bare
                .rsplit(|c: char| c.is_whitespace() || c == '*')
                .find(|w| !w.is_empty())?;
            fields.push(Field {
                name: fname.to_owned(),
                offset: offset?,
                size: size?,
                signed,
                data_loc,
                chars,
            });
        }
    }
    Some(Format {
        name: name?,
        id: id?,
        fields,
    })
}

impl Format {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// An integer field of `raw`, sign-extended when the format says it is signed.
    pub fn int(&self, raw: &[u8], name: &str) -> Option<i64> {
        let f = self.field(name)?;
        let b = raw.get(f.offset..f.offset + f.size)?;
        Some(match (f.size, f.signed) {
            (1, true) => b[0] as i8 as i64,
            (1, false) => b[0] as i64,
            (2, true) => i16::from_ne_bytes(b.try_into().ok()?) as i64,
            (2, false) => u16::from_ne_bytes(b.try_into().ok()?) as i64,
            (4, true) => i32::from_ne_bytes(b.try_into().ok()?) as i64,
            (4, false) => u32::from_ne_bytes(b.try_into().ok()?) as i64,
            (8, _) => i64::from_ne_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }

    /// Writes `v` into the integer field `name` of `raw` (truncated to the field's size); a
    /// field the format lacks, or one past the end of `raw`, is left alone.
    pub fn put_int(&self, raw: &mut [u8], name: &str, v: i64) {
        let Some(f) = self.field(name) else { return };
        let Some(b) = raw.get_mut(f.offset..f.offset + f.size) else {
            return;
        };
        match f.size {
            1 => b.copy_from_slice(&(v as u8).to_ne_bytes()),
            2 => b.copy_from_slice(&(v as u16).to_ne_bytes()),
            4 => b.copy_from_slice(&(v as u32).to_ne_bytes()),
            8 => b.copy_from_slice(&v.to_ne_bytes()),
            _ => {}
        }
    }

    /// Writes `v` into the string field `name` of `raw`: a `char[N]` truncated to leave its
    /// NUL, a `__data_loc char[]` appended to `raw` with its NUL. A field the format lacks is
    /// left alone.
    pub fn put_string(&self, raw: &mut Vec<u8>, name: &str, v: &str) {
        let Some(f) = self.field(name) else { return };
        if f.data_loc {
            let (off, len) = (raw.len(), v.len() + 1);
            if off > 0xffff || len > 0xffff || raw.len() < f.offset + 4 {
                return;
            }
            raw.extend_from_slice(v.as_bytes());
            raw.push(0);
            let loc = (off as u32) | (len as u32) << 16;
            raw[f.offset..f.offset + 4].copy_from_slice(&loc.to_ne_bytes());
        } else if let Some(b) = raw.get_mut(f.offset..f.offset + f.size) {
            b.fill(0);
            let n = v.len().min(f.size.saturating_sub(1));
            b[..n].copy_from_slice(&v.as_bytes()[..n]);
        }
    }

    /// A string field of `raw` (`char[N]` or `__data_loc char[]`), up to its first NUL.
    pub fn string(&self, raw: &[u8], name: &str) -> Option<String> {
        let f = self.field(name)?;
        let bytes = if f.data_loc {
            let loc = u32::from_ne_bytes(raw.get(f.offset..f.offset + 4)?.try_into().ok()?);
            let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
            raw.get(off..off + len)?
        } else {
            raw.get(f.offset..f.offset + f.size)?
        };
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }
}
