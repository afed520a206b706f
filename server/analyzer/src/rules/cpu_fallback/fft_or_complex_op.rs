//! TPU204: FFTs, `stft` and complex construction ops without an XLA lowering.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.fft.*` transforms, `torch.stft` / `torch.istft` (and the tensor
    /// methods `x.stft()` / `x.istft()`), `torch.polar` and `torch.complex`, and for torchaudio's
    /// spectrogram transforms (`torchaudio.transforms.MelSpectrogram`, `Spectrogram`, `MFCC`,
    /// `LFCC`, `InverseSpectrogram`, `GriffinLim`, which run `torch.stft` / `torch.istft`) built
    /// as layers of an `nn.Module`.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA has no lowering for the FFT primitives (`_fft_r2c`, `_fft_c2c`, `_fft_c2r`
    /// are absent from its op table) nor for `stft`, `polar` and `complex`. Measured on torch_xla
    /// 2.9.0: every `torch.fft` transform and `stft` ran `aten::_fft_r2c`/`_fft_c2c`/`_fft_c2r`
    /// on the CPU, `polar` and `complex` ran `aten::polar.out`/`aten::complex.out`, and `istft`
    /// aborted the process inside XLA. Each call copies the tensor to the host, transforms it on the CPU and
    /// copies it back. A common case is rotary position embeddings written with
    /// `torch.polar`: when the table is built from device tensors in `forward`, every step pays
    /// a host round trip (tables built once on the CPU at construction are not reported).
    ///
    /// TorchTPU: not measured (it has no public CPU build). Its sources, as read by a third
    /// party, say that it has no silent CPU fallback: an op it does not implement raises unless
    /// `execution_mode.enable_cpu_fallback = True`; which of these ops it implements is not
    /// documented.
    ///
    /// ## Example
    /// ```python
    /// freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    /// spectrum = torch.fft.rfft(signal, dim=-1)
    /// ```
    ///
    /// Use instead: real-valued formulations. For rotary embeddings, keep `cos` and `sin`
    /// tables and rotate pairs of channels (`x * cos + rotate_half(x) * sin`). For spectral
    /// features, compute them in the data pipeline, or express a small fixed-size DFT as a
    /// matrix multiplication with precomputed cosine/sine bases (which runs on the MXU).
    ///
    /// ## Known problems
    /// A torchaudio transform is reported only where it is built inside an `nn.Module` class
    /// (a layer of the model, on the model's device); one built in a dataset or a collate
    /// function runs on the host and is fine.
    /// `torch.view_as_complex` is not reported: PyTorch/XLA lowers `view_as_complex_copy` for
    /// half, float and double inputs (its autocast comment calling it "not lowered" is stale).
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `fft.*`, `stft*`, `istft`, `polar`, `complex`, `view_as_complex`; torch 2.9.0, torch_xla
    ///   2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `torch_xla/csrc/autocast_mode.cpp` (`stft`, `polar` "not lowered") and
    ///   `codegen/xla_native_functions.yaml` (no `_fft_*`)
    pub(crate) static FFT_OR_COMPLEX_OP = {
        code: "TPU204",
        name: "fft-or-complex-op",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["fft", "stft", "istft", "polar", "complex", "Spectrogram", "MelSpectrogram", "InverseSpectrogram", "MFCC", "LFCC", "GriffinLim"],
        calls: ["Spectrogram", "MelSpectrogram", "MFCC", "LFCC", "InverseSpectrogram", "GriffinLim", "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "stft", "istft", "polar", "complex"],
        check: check,
    }
}

/// TPU204
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if let Some((function, _)) = context.call_parts(call)
        && let Some(qualified) = context.qualified_name(function)
        && let Some(transform) = qualified.strip_prefix("torchaudio.transforms.")
        && crate::torch_api::TORCHAUDIO_STFT_TRANSFORMS.contains(&transform)
    {
        // A layer of a model runs where the model runs; in a dataset it runs on the host.
        if context.semantic().in_module_class() {
            let message = format!(
                "`{}` computes `torch.stft`, which has no XLA lowering: as a layer of the model it runs on the CPU every forward; compute spectrograms in the data pipeline",
                context.text(function)
            );
            context.report(function.byte_range(), message);
        }
        return;
    }
    let Some(target) = helpers::torch_call(context, call) else {
        return;
    };
    let name = target.name.as_str();
    let flagged = match target.receiver {
        Some(_) => matches!(name, "torch.stft" | "torch.istft"),
        None => {
            name.starts_with("torch.fft.") && name.rsplit('.').next().is_some_and(is_transform)
                || matches!(
                    name,
                    "torch.stft" | "torch.istft" | "torch.polar" | "torch.complex"
                )
                || name == "torch.functional.stft"
        }
    };
    if !flagged {
        return;
    }
    super::report_unlowered_call(context, call, &target, None);
}

/// `torch.fft` transforms (not the helpers `fftfreq` / `fftshift`, which are index arithmetic
/// and lower).
fn is_transform(function: &str) -> bool {
    matches!(
        function,
        "fft"
            | "ifft"
            | "fft2"
            | "ifft2"
            | "fftn"
            | "ifftn"
            | "rfft"
            | "irfft"
            | "rfft2"
            | "irfft2"
            | "rfftn"
            | "irfftn"
            | "hfft"
            | "ihfft"
            | "hfft2"
            | "ihfft2"
            | "hfftn"
            | "ihfftn"
    )
}
