//! Pull diagnostics: `textDocument/diagnostic` and `workspace/diagnostic`, notebook cells included.

use super::*;

impl Server {
    pub(super) async fn on_diagnostic(
        &self,
        params: DocumentDiagnosticParams,
    ) -> Result<DocumentDiagnosticReportResult> {
        let token = CancellationToken::default();
        let guard = token.drop_guard();
        let uri = params.text_document.uri;
        let previous = params.previous_result_id.as_deref();
        let encoding = self.session.encoding();
        // A quick analysis for a client that takes refreshes (see `Session::pull_analysis_for`).
        let target = self.target(&uri, &token, true).await?;
        guard.disarm();
        Ok(match target {
            None => handlers::empty_report(),
            Some(Target::Text(analysis)) => {
                handlers::document_report(previous, crate::runtime::result_id(&analysis), || {
                    crate::runtime::lsp_diagnostics(&analysis, &uri, encoding)
                })
            }
            Some(Target::Cell(analysis)) => {
                let result_id = analysis.result_id();
                self.session.index().note_served(&uri, &result_id);
                handlers::document_report(previous, result_id, || {
                    analysis.cell_diagnostics(&uri, encoding)
                })
            }
        })
    }

    pub(super) async fn on_workspace_diagnostic(
        &self,
        params: WorkspaceDiagnosticParams,
    ) -> Result<WorkspaceDiagnosticReportResult> {
        let token = CancellationToken::default();
        let guard = token.drop_guard();
        let previous: std::collections::HashMap<Uri, String> = params
            .previous_result_ids
            .into_iter()
            .map(|previous| (previous.uri, previous.value))
            .collect();
        let previous_result_id = |uri: &Uri| previous.get(uri).map(String::as_str);
        let encoding = self.session.encoding();
        let mut items = Vec::new();
        // Text documents and notebooks, by URI; a notebook reports each of its cells.
        for uri in self.session.open_uris() {
            if token.is_cancelled() {
                return Err(Error::request_cancelled());
            }
            match self.document_analysis(&uri, &token).await? {
                None => {}
                Some(DocumentAnalysis::Text(analysis)) => {
                    items.push(handlers::workspace_item(
                        &uri,
                        analysis.version,
                        previous_result_id(&uri),
                        crate::runtime::result_id(&analysis),
                        || crate::runtime::lsp_diagnostics(&analysis, &uri, encoding),
                    ));
                }
                Some(DocumentAnalysis::Notebook(analysis)) => {
                    items.extend(handlers::notebook_workspace_items(
                        &analysis,
                        previous_result_id,
                        encoding,
                        |cell, result_id| self.session.index().note_served(cell, result_id),
                    ));
                }
            }
        }
        guard.disarm();
        Ok(WorkspaceDiagnosticReportResult::Report(
            WorkspaceDiagnosticReport { items },
        ))
    }
}
