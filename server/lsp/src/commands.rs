//! The `workspace/executeCommand` commands the server supports: a closed set, each with an
//! identifier (what clients send) and a label (what a command palette shows).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SupportedCommand {
    /// Apply every fix the settings allow to one document (through `workspace/applyEdit`).
    ApplyAutofix,
    /// Check the TPU Python environment (`tpulint doctor`) and return the report.
    CheckEnvironment,
    /// Report the server's version, negotiated capabilities, settings and open documents.
    PrintDebugInformation,
}

impl SupportedCommand {
    pub const fn all() -> [SupportedCommand; 3] {
        [
            SupportedCommand::ApplyAutofix,
            SupportedCommand::CheckEnvironment,
            SupportedCommand::PrintDebugInformation,
        ]
    }

    pub const fn identifier(self) -> &'static str {
        match self {
            SupportedCommand::ApplyAutofix => "tpulint.applyAutofix",
            SupportedCommand::CheckEnvironment => "tpulint.checkEnvironment",
            SupportedCommand::PrintDebugInformation => "tpulint.printDebugInformation",
        }
    }

    pub const fn label(self) -> &'static str {
        match self {
            SupportedCommand::ApplyAutofix => "Fix all auto-fixable problems",
            SupportedCommand::CheckEnvironment => "Check the TPU environment",
            SupportedCommand::PrintDebugInformation => "Print debug information",
        }
    }

    pub fn from_identifier(identifier: &str) -> Option<SupportedCommand> {
        SupportedCommand::all()
            .into_iter()
            .find(|command| command.identifier() == identifier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_round_trip_and_are_namespaced() {
        for command in SupportedCommand::all() {
            assert!(command.identifier().starts_with("tpulint."));
            assert_eq!(
                SupportedCommand::from_identifier(command.identifier()),
                Some(command)
            );
        }
        assert_eq!(SupportedCommand::from_identifier("tpulint.nope"), None);
    }
}
