"""A small CTC acoustic model with an on-the-fly spectrogram front end."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LogMelFrontEnd(nn.Module):
    def __init__(self, n_fft=400, hop_length=160, n_mels=80):
        super().__init__()
        self.n_fft = n_fft
        self.hop_length = hop_length
        self.register_buffer("window", torch.hann_window(n_fft))  # ok
        self.register_buffer("mel_fb", torch.randn(n_fft // 2 + 1, n_mels))  # ok

    def forward(self, waveform):
        spec = torch.stft(waveform, self.n_fft, self.hop_length, window=self.window, return_complex=True)  # expect: TPU204
        power = spec.abs() ** 2
        return torch.log(power.transpose(1, 2) @ self.mel_fb + 1e-6)


class CTCModel(nn.Module):
    def __init__(self, vocab_size, hidden=512):
        super().__init__()
        self.frontend = LogMelFrontEnd()
        self.encoder = nn.LSTM(80, hidden, num_layers=3, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * hidden, vocab_size)
        self.ctc = nn.CTCLoss(blank=0, zero_infinity=True)  # expect: TPU203

    def forward(self, waveform, targets=None, target_lengths=None):
        feats = self.frontend(waveform)
        hidden, _ = self.encoder(feats)
        log_probs = F.log_softmax(self.proj(hidden), dim=-1)
        if targets is None:
            return log_probs
        input_lengths = torch.full((log_probs.size(0),), log_probs.size(1), dtype=torch.long, device=log_probs.device)  # ok
        flat_targets = targets.masked_select(targets > 0)  # expect: TPU303
        loss = self.ctc(log_probs.transpose(0, 1), flat_targets, input_lengths, target_lengths)
        return loss, log_probs


def greedy_ctc_decode(log_probs, blank=0):
    # Host-side decoding for reporting: called on CPU outputs after evaluation.
    best = log_probs.argmax(-1).cpu()  # ok
    results = []
    for seq in best:
        collapsed = torch.unique_consecutive(seq)  # ok
        results.append([int(t) for t in collapsed if t != blank])  # ok
    return results
