//! STUB: being written by the env helper.
/// Renders the environment for `oscost env`.
pub fn render_environment(env: &oscost_measure::env::Environment) -> String {
    format!("{env:#?}")
}
