//! A result document's head: which run it is, when it started and on what machine, read
//! without building its experiments, so that a reader choosing among many documents holds
//! one at a time and keeps only what it chooses by.

use crate::env::Environment;
use crate::schema::{
    check_no_nul, check_run_identity, leading_schema, ReadError, OLDER_SCHEMAS, SCHEMA,
};
use serde::de::IgnoredAny;
use serde::Deserialize;

/// The run a result document holds, without its results: what [`read_head`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultHead {
    /// The run's id, in lower case as [`crate::read`] gives it; `None` in an `oscost/1`
    /// document.
    pub run_id: Option<String>,
    /// When the run started; `None` in an `oscost/1` document.
    pub started_at: Option<String>,
    /// The machine and the run's settings.
    pub environment: Environment,
}

/// Reads the head of a result document: what [`crate::read`] checks of the document as a
/// whole (JSON to its end, the schema, no NUL character, no unknown top-level field, the id
/// and start time) with the same errors, and its environment in full; the experiments are
/// passed over as JSON, unbuilt and unchecked, so a document read whole later can still be
/// refused for them.
pub fn read_head(text: &str) -> Result<ResultHead, ReadError> {
    // The fields of [`crate::ResultDoc`], and its name, so that what it refuses is refused
    // here in the same words.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // `schema`, `experiments` and `bill` are read to be checked, not kept.
    struct ResultDoc {
        schema: String,
        #[serde(default)]
        run_id: Option<String>,
        #[serde(default)]
        started_at: Option<String>,
        environment: Environment,
        experiments: IgnoredAny,
        #[serde(default)]
        bill: Option<IgnoredAny>,
    }
    #[derive(Deserialize)]
    struct Header {
        schema: String,
    }
    // The steps and errors of `read`, in its order.
    let schema = match leading_schema(text) {
        Some(schema) => schema,
        None => {
            serde_json::from_str::<Header>(text)
                .map_err(|e| ReadError::NotADocument(e.to_string()))?
                .schema
        }
    };
    let invalid = |e: String| ReadError::Invalid(serde::de::Error::custom(e));
    check_no_nul(text).map_err(invalid)?;
    let current = schema == SCHEMA;
    if !current && !OLDER_SCHEMAS.contains(&schema.as_str()) {
        return Err(ReadError::Unsupported(schema));
    }
    let head: ResultDoc =
        serde_json::from_str(text).map_err(|e| match serde_json::from_str::<Header>(text) {
            Err(h) => ReadError::NotADocument(h.to_string()),
            Ok(_) => ReadError::Invalid(e),
        })?;
    if current {
        check_run_identity(head.run_id.as_deref(), head.started_at.as_deref()).map_err(invalid)?;
    } else if head.run_id.is_some() || head.started_at.is_some() {
        return Err(invalid(format!("{schema} has no run_id or started_at")));
    }
    Ok(ResultHead {
        run_id: head.run_id.map(|id| id.to_ascii_lowercase()),
        started_at: head.started_at,
        environment: head.environment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ResultDoc;

    fn doc() -> ResultDoc {
        ResultDoc {
            schema: SCHEMA.into(),
            run_id: Some("3F1C2B9E-8A4D-4C1E-9B7A-2D5E6F708192".into()),
            started_at: Some("2026-11-23T03:13:14Z".into()),
            environment: crate::example::environment(),
            experiments: Vec::new(),
            bill: None,
        }
    }

    #[test]
    fn the_head_is_the_whole_documents_run_and_machine() {
        let text = serde_json::to_string(&doc()).unwrap();
        let whole = crate::read(&text).unwrap();
        let head = read_head(&text).unwrap();
        assert_eq!(head.run_id, whole.run_id);
        assert_eq!(
            head.run_id.as_deref(),
            Some("3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708192")
        );
        assert_eq!(head.started_at, whole.started_at);
        assert_eq!(head.environment, whole.environment);
    }

    /// Whatever `read` refuses before the experiments, `read_head` refuses with the same words.
    #[test]
    fn the_head_is_refused_as_the_document_is() {
        let good = serde_json::to_value(doc()).unwrap();
        let mut cases: Vec<String> = vec![
            String::new(),
            "[]".into(),
            "{\"x\": 1}".into(),
            "{\"schema\": \"oscost/9\"}".into(),
            "{\"schema\": \"oscost/2\"}".into(),
        ];
        let text = good.to_string();
        cases.push(text[..text.len() / 2].to_owned());
        for (field, value) in [
            ("run_id", serde_json::json!("not-a-uuid")),
            ("started_at", serde_json::json!("yesterday")),
            ("extra", serde_json::json!(1)),
        ] {
            let mut v = good.clone();
            v[field] = value;
            cases.push(v.to_string());
        }
        let mut v = good.clone();
        v["environment"]["hostname"] = "a\u{0}b".into();
        cases.push(v.to_string());
        let mut v = good.clone();
        v["environment"]["no_such_field"] = 1.into();
        cases.push(v.to_string());
        for text in &cases {
            let whole = crate::read(text).unwrap_err().to_string();
            let head = read_head(text).unwrap_err().to_string();
            assert_eq!(head, whole, "{text}");
        }
    }
}
