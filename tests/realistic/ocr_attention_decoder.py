"""An attention-based OCR decoder with a while-loop greedy decode."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class AttentionDecoder(nn.Module):
    def __init__(self, vocab_size, hidden=256, sos=1, eos=2, max_len=40):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.rnn = nn.GRUCell(2 * hidden, hidden)
        self.attn = nn.Linear(2 * hidden, 1)
        self.out = nn.Linear(hidden, vocab_size)
        self.sos, self.eos, self.max_len = sos, eos, max_len

    def step(self, token, state, memory):
        query = state.unsqueeze(1).expand(-1, memory.size(1), -1)
        weights = F.softmax(self.attn(torch.cat([query, memory], -1)).squeeze(-1), dim=-1)
        context = (weights.unsqueeze(-1) * memory).sum(1)
        state = self.rnn(torch.cat([self.embed(token), context], -1), state)
        return self.out(state), state

    def forward(self, memory, targets=None):
        b = memory.size(0)
        token = torch.full((b,), self.sos, dtype=torch.long, device=memory.device)  # ok
        state = memory.mean(1)
        if targets is not None:
            logits = []
            for t in range(targets.size(1)):
                step_logits, state = self.step(token, state, memory)
                logits.append(step_logits)
                token = targets[:, t]
            return torch.stack(logits, 1)
        outputs = []
        finished = torch.zeros(b, dtype=torch.bool, device=memory.device)  # ok
        while not finished.all():  # expect: TPU107
            step_logits, state = self.step(token, state, memory)
            token = step_logits.argmax(-1)
            outputs.append(token)
            finished |= token == self.eos
            if len(outputs) >= self.max_len:
                break
        return torch.stack(outputs, 1)

    def decode_fixed(self, memory):
        b = memory.size(0)
        token = torch.full((b,), self.sos, dtype=torch.long, device=memory.device)
        state = memory.mean(1)
        outputs = []
        for _ in range(self.max_len):
            step_logits, state = self.step(token, state, memory)
            token = step_logits.argmax(-1)  # ok
            outputs.append(token)
        return torch.stack(outputs, 1)  # ok


def lengths_from_predictions(preds, eos=2):
    # Host post-processing of already-copied predictions.
    preds = preds.cpu()  # ok
    return [int((row == eos).nonzero()[0]) if (row == eos).any() else len(row) for row in preds]  # ok
