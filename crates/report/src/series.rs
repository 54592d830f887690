//! The series cases carry (a timeline's trace, a ring's visit order) as CSV files, one per
//! case and series, for `--series DIR`.

use oscost_model::case::Series;
use oscost_model::ExperimentResult;

/// A series as CSV: its columns as the header, one row per point, each value in its shortest
/// exact form (`12`, `3.5`).
pub fn csv(s: &Series) -> anyhow::Result<String> {
    let mut w = crate::csvw::CsvWriter::new(&s.columns)?;
    for p in &s.points {
        w.row(p.iter().map(|v| v.to_string()))?;
    }
    w.finish()
}

/// Every series of experiment `e`: (file name `<case id>.<series>.csv`, contents).
pub fn files(e: &ExperimentResult) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for c in &e.cases {
        for s in &c.series {
            let stem = format!("{}.{}", c.id, s.name);
            out.push((crate::plot::file_name(&stem, "csv"), csv(s)?));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_is_a_csv_with_its_columns() {
        let s = Series {
            name: "trace".into(),
            columns: vec!["elapsed_ns".into(), "worker".into(), "chunk".into()],
            points: vec![vec![1500.5, 1.0, 1.0], vec![3000.0, 2.0, 1.0]],
        };
        assert_eq!(
            csv(&s).unwrap(),
            "elapsed_ns,worker,chunk\n1500.5,1,1\n3000,2,1\n"
        );
    }
}
