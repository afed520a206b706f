//! `textDocument/hover`: the documentation of the rules (and runtime codes) with a finding there.

use super::*;

impl Server {
    pub(super) async fn on_hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let token = CancellationToken::default();
        let _guard = token.drop_guard();
        let position = params.text_document_position_params;
        let uri = &position.text_document.uri;
        let encoding = self.session.encoding();
        if let Some(analysis) = self.notebook_analysis(uri, &token).await? {
            return Ok(handlers::cell_hover(
                &analysis,
                uri,
                position.position,
                encoding,
                &actions::builtin_docs,
            ));
        }
        let Some(analysis) = self.analysis_or_error(uri, &token).await? else {
            return Ok(None);
        };
        let (offset, hover) = handlers::text_hover(
            &analysis,
            position.position,
            encoding,
            &actions::builtin_docs,
        );
        Ok(crate::runtime::with_runtime_hover(
            hover, &analysis, uri, offset, encoding,
        ))
    }
}
