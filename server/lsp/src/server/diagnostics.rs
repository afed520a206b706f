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
        if let Some(analysis) = self.notebook_analysis(&uri, &token).await? {
            guard.disarm();
            let result_id = analysis.result_id();
            self.notebooks.note_served(&uri, &result_id);
            return Ok(handlers::document_report(previous, result_id, || {
                analysis.cell_diagnostics(&uri, encoding)
            }));
        }
        let analysis = self.analysis_or_error(&uri, &token).await?;
        guard.disarm();
        Ok(match analysis {
            None => handlers::empty_report(),
            Some(analysis) => {
                handlers::document_report(previous, crate::runtime::result_id(&analysis), || {
                    crate::runtime::lsp_diagnostics(&analysis, &uri, encoding)
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
        let encoding = self.session.encoding();
        let mut items = Vec::new();
        for uri in self.session.open_uris() {
            if token.is_cancelled() {
                return Err(Error::request_cancelled());
            }
            let Some(analysis) = self.analysis_or_error(&uri, &token).await? else {
                continue;
            };
            items.push(handlers::workspace_item(
                &uri,
                analysis.version,
                previous.get(&uri).map(String::as_str),
                crate::runtime::result_id(&analysis),
                || crate::runtime::lsp_diagnostics(&analysis, &uri, encoding),
            ));
        }
        // Notebooks: one report per cell, each with its own URI and version; the result id is
        // the notebook's (an edit in one cell can change another cell's findings).
        for notebook_uri in self.notebooks.uris() {
            if token.is_cancelled() {
                return Err(Error::request_cancelled());
            }
            let Some(analysis) = self.notebook_analysis_of(&notebook_uri, &token).await? else {
                continue;
            };
            let result_id = analysis.result_id();
            for cell in &analysis.cells {
                self.notebooks.note_served(&cell.uri, &result_id);
                items.push(handlers::workspace_item(
                    &cell.uri,
                    cell.cell_version,
                    previous.get(&cell.uri).map(String::as_str),
                    result_id.clone(),
                    || analysis.cell_diagnostics(&cell.uri, encoding),
                ));
            }
        }
        guard.disarm();
        Ok(WorkspaceDiagnosticReportResult::Report(
            WorkspaceDiagnosticReport { items },
        ))
    }
}
