"""Fine-tune wav2vec2 with a CTC head on LibriSpeech on one TPU device (torch_xla), with a word-error-rate eval."""
import jiwer
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchaudio
from torch.utils.data import DataLoader, Dataset
from transformers import Wav2Vec2Model, Wav2Vec2Processor

import torch_xla
import torch_xla.core.xla_model as xm

processor = Wav2Vec2Processor.from_pretrained("facebook/wav2vec2-base-960h")


class LibriSpeech(Dataset):
    def __init__(self, root, split):
        self.data = torchaudio.datasets.LIBRISPEECH(root, url=split, download=False)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        wav, sr, text, *_ = self.data[i]
        wav = wav.mean(0)[: 16000 * 16]
        spec = torch.stft(wav, n_fft=400, hop_length=160, window=torch.hann_window(400), return_complex=True).abs()  # ok
        return {"audio": wav.numpy(), "energy": spec.pow(2).sum(0).log1p(), "text": text}


def collate(batch):
    audio = processor([b["audio"] for b in batch], sampling_rate=16000, padding=True, return_tensors="pt")  # expect: TPU307
    with processor.as_target_processor():
        labels = processor([b["text"] for b in batch], padding="max_length", max_length=256, return_tensors="pt")  # ok
    label_ids = labels.input_ids.masked_fill(labels.attention_mask.eq(0), -100)
    return audio.input_values, audio.attention_mask, label_ids


class CTCModel(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.encoder = Wav2Vec2Model.from_pretrained("facebook/wav2vec2-base")
        self.encoder.feature_extractor._freeze_parameters()
        self.head = nn.Linear(self.encoder.config.hidden_size, vocab_size)
        self.ctc = nn.CTCLoss(blank=0, zero_infinity=True)  # expect: TPU203

    def forward(self, audio, attention_mask, labels=None):
        hidden = self.encoder(audio, attention_mask=attention_mask).last_hidden_state
        logits = self.head(hidden)
        if labels is None:
            return logits
        input_lengths = self.encoder._get_feat_extract_output_lengths(attention_mask.sum(-1))
        target_mask = labels >= 0
        targets = labels[target_mask]  # expect: TPU302
        log_probs = F.log_softmax(logits, dim=-1).transpose(0, 1).float()
        return self.ctc(log_probs, targets, input_lengths, target_mask.sum(-1)), logits


def evaluate(model, loader, device):
    model.eval()
    hyps, refs = [], []
    with torch.no_grad():
        for audio, mask, labels in loader:  # expect: TPU607
            logits = model(audio.to(device), mask.to(device))
            pred_ids = logits.argmax(dim=-1)
            hyps += processor.batch_decode(pred_ids.cpu().numpy())  # ok
            refs += processor.batch_decode(labels.masked_fill(labels < 0, processor.tokenizer.pad_token_id), group_tokens=False)  # ok
    model.train()
    return jiwer.wer(refs, hyps)


def main():
    device = xm.xla_device()  # expect: TPU602
    model = CTCModel(len(processor.tokenizer)).to(device)
    train_loader = DataLoader(LibriSpeech("/data", "train-clean-100"), batch_size=8, shuffle=True, collate_fn=collate, drop_last=True)  # ok
    dev_loader = DataLoader(LibriSpeech("/data", "dev-clean"), batch_size=8, collate_fn=collate)  # ok
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    step = 0
    for epoch in range(20):
        for audio, mask, labels in train_loader:  # expect: TPU607
            audio, mask, labels = audio.to(device), mask.to(device), labels.to(device)
            loss, _ = model(audio, mask, labels)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if torch.isnan(norm):  # expect: TPU108|TPU107
                optimizer.zero_grad()
                continue
            optimizer.step()
            optimizer.zero_grad()
            xm.mark_step()  # expect: TPU601
            step += 1
            if step % 50 == 0:
                print(f"step {step} loss {loss.item():.3f}")  # ok
        print(f"epoch {epoch}: dev WER {evaluate(model, dev_loader, device):.3f}")  # ok
    xm.save(model.state_dict(), "/tmp/w2v_ctc.pt")  # ok


if __name__ == "__main__":
    main()
