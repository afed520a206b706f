"""Tacotron 2 on LJSpeech: location-sensitive attention, a stop-token gate, teacher forcing in
training and autoregressive decoding until the gate fires at inference. Ported from NVIDIA's GPU
recipe to TorchTPU (one v5e chip); the training step is compiled with backend="tpu"."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from tacotron_data import LJSpeech
from tacotron_layers import Encoder, LocationLayer, Postnet, Prenet


def get_mask_from_lengths(lengths):
    max_len = torch.max(lengths).item()  # expect: TPU101
    ids = torch.arange(0, max_len, device=lengths.device)  # ok
    return ids < lengths.unsqueeze(1)


class TextMelCollate:
    def __call__(self, batch):
        input_lengths, order = torch.sort(torch.LongTensor([len(x[0]) for x in batch]), descending=True)  # ok
        text_padded = torch.zeros(len(batch), int(input_lengths[0]), dtype=torch.long)  # debatable (same per-batch padding as below)
        for i, j in enumerate(order.tolist()):  # ok
            text_padded[i, : batch[j][0].size(0)] = batch[j][0]
        max_target_len = max(x[1].size(1) for x in batch)  # expect: TPU308
        mel_padded = torch.zeros(len(batch), 80, max_target_len)
        gate_padded = torch.zeros(len(batch), max_target_len)
        output_lengths = torch.LongTensor(len(batch))
        for i, j in enumerate(order.tolist()):
            mel = batch[j][1]
            mel_padded[i, :, : mel.size(1)] = mel
            gate_padded[i, mel.size(1) - 1 :] = 1
            output_lengths[i] = mel.size(1)
        return text_padded, input_lengths, mel_padded, gate_padded, output_lengths


class Attention(nn.Module):
    def __init__(self, rnn_dim=1024, emb_dim=512, attn_dim=128):
        super().__init__()
        self.query_layer = nn.Linear(rnn_dim, attn_dim, bias=False)
        self.memory_layer = nn.Linear(emb_dim, attn_dim, bias=False)
        self.v = nn.Linear(attn_dim, 1, bias=False)
        self.location_layer = LocationLayer(32, 31, attn_dim)

    def forward(self, query, memory, processed_memory, weights_cat, mask):
        energies = self.v(torch.tanh(self.query_layer(query.unsqueeze(1)) + self.location_layer(weights_cat) + processed_memory)).squeeze(-1)
        if mask is not None:
            energies = energies.masked_fill(mask, -float("inf"))  # ok
        weights = F.softmax(energies, dim=1)
        return torch.bmm(weights.unsqueeze(1), memory).squeeze(1), weights


class Decoder(nn.Module):
    def __init__(self, n_mels=80):
        super().__init__()
        self.n_mels = n_mels
        self.prenet = Prenet(n_mels, [256, 256])
        self.attention_rnn = nn.LSTMCell(256 + 512, 1024)
        self.attention = Attention()
        self.decoder_rnn = nn.LSTMCell(1024 + 512, 1024)
        self.linear_projection = nn.Linear(1024 + 512, n_mels)
        self.gate_layer = nn.Linear(1024 + 512, 1)

    def init_states(self, memory, mask):
        B, T, _ = memory.shape
        self.att_h, self.att_c = memory.new_zeros(B, 1024), memory.new_zeros(B, 1024)  # ok
        self.dec_h, self.dec_c = memory.new_zeros(B, 1024), memory.new_zeros(B, 1024)  # ok
        self.att_weights = torch.zeros(B, T)
        self.att_weights_cum = memory.new_zeros(B, T)  # ok
        self.att_context = memory.new_zeros(B, 512)  # ok
        self.memory, self.processed, self.mask = memory, self.attention.memory_layer(memory), mask

    def decode(self, decoder_input):
        cell_input = torch.cat((decoder_input, self.att_context), -1)
        self.att_h, self.att_c = self.attention_rnn(cell_input, (self.att_h, self.att_c))
        weights_cat = torch.cat((self.att_weights.unsqueeze(1), self.att_weights_cum.unsqueeze(1)), dim=1)  # expect: TPU405
        self.att_context, self.att_weights = self.attention(self.att_h, self.memory, self.processed, weights_cat, self.mask)
        self.att_weights_cum = self.att_weights_cum + self.att_weights
        self.dec_h, self.dec_c = self.decoder_rnn(torch.cat((self.att_h, self.att_context), -1), (self.dec_h, self.dec_c))
        out = torch.cat((self.dec_h, self.att_context), dim=1)
        return self.linear_projection(out), self.gate_layer(out), self.att_weights

    def forward(self, memory, decoder_inputs, memory_lengths):
        go = memory.new_zeros(1, memory.size(0), self.n_mels)  # ok
        decoder_inputs = self.prenet(torch.cat((go, decoder_inputs.permute(2, 0, 1)), dim=0))
        self.init_states(memory, mask=~get_mask_from_lengths(memory_lengths))
        mels, gates = [], []
        while len(mels) < decoder_inputs.size(0) - 1:  # ok
            mel, gate, _ = self.decode(decoder_inputs[len(mels)])  # ok
            mels.append(mel)
            gates.append(gate.squeeze(1))
        return torch.stack(mels, 2), torch.stack(gates, 1)

    @torch.no_grad()
    def inference(self, memory, max_steps=1000, gate_threshold=0.5):
        decoder_input = memory.new_zeros(memory.size(0), self.n_mels)  # ok
        self.init_states(memory, mask=None)
        mels = []
        while True:
            mel, gate, _ = self.decode(self.prenet(decoder_input))
            mels.append(mel)
            if torch.sigmoid(gate).item() > gate_threshold:  # expect: TPU101|TPU107
                break
            if len(mels) == max_steps:
                print("Warning! Reached max decoder steps")  # ok
                break
            decoder_input = mel
        return torch.stack(mels, 2)


class Tacotron2(nn.Module):
    def __init__(self, n_symbols=148):
        super().__init__()
        self.embedding = nn.Embedding(n_symbols, 512)
        self.encoder, self.decoder, self.postnet = Encoder(), Decoder(), Postnet()

    def forward(self, text, text_lengths, mels):
        memory = self.encoder(self.embedding(text).transpose(1, 2), text_lengths)
        mel_out, gate_out = self.decoder(memory, mels, text_lengths)
        return mel_out, mel_out + self.postnet(mel_out), gate_out


def main():
    device = torch.device("tpu")
    torch.manual_seed(1234)
    torch.cuda.manual_seed(1234)  # expect: TPU404
    model = Tacotron2().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-6)  # expect: TPU608
    loader = DataLoader(LJSpeech("filelists/ljs_train.txt"), batch_size=64, shuffle=True, num_workers=4, collate_fn=TextMelCollate(), drop_last=True)  # ok

    @torch.compile(backend="tpu", dynamic=False)
    def train_step(text, text_lengths, mels, gate_target):
        mel_out, mel_post, gate_out = model(text, text_lengths, mels)
        loss = F.mse_loss(mel_out, mels) + F.mse_loss(mel_post, mels) + F.binary_cross_entropy_with_logits(gate_out, gate_target)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        return loss.detach(), grad_norm

    for epoch in range(500):
        for i, batch in enumerate(loader):
            text, text_lengths, mels, gate_target, _ = [t.to(device) for t in batch]
            loss, grad_norm = train_step(text, text_lengths, mels, gate_target)
            if math.isnan(grad_norm):  # expect: TPU108|TPU106
                print(f"NaN gradient at epoch {epoch} iter {i}")
            if i % 100 == 0:
                print(f"epoch {epoch} iter {i} loss {loss.item():.4f}")  # ok
        torch.save({"model": model.state_dict(), "epoch": epoch}, f"tacotron2_{epoch}.pt")  # ok


if __name__ == "__main__":
    main()
