"""Knowledge-distillation losses used in the student's training step."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class DistillationLoss(nn.Module):
    def __init__(self, temperature=2.0, alpha=0.5):
        super().__init__()
        self.temperature = temperature
        self.alpha = alpha

    def forward(self, student_logits, teacher_logits, labels):
        t = torch.tensor(self.temperature)  # ok (a zero-dim constant: torch_xla caches it, one transfer per run; measured)
        soft = F.kl_div(F.log_softmax(student_logits / t, -1), F.softmax(teacher_logits / t, -1), reduction="batchmean")
        hard = F.cross_entropy(student_logits, labels)
        ignore = labels == -100
        hard_masked = F.cross_entropy(student_logits[~ignore], labels[~ignore])  # expect: TPU302
        class_weights = torch.ones(student_logits.size(-1))  # ok (used only through .type_as, which moves it like .to(x.device))
        weighted = F.cross_entropy(student_logits, labels, weight=class_weights.type_as(student_logits))  # ok
        return self.alpha * soft * self.temperature ** 2 + (1 - self.alpha) * (hard + hard_masked + weighted) / 3


class CosineEmbeddingDistill(nn.Module):
    def forward(self, student_hidden, teacher_hidden, attention_mask):
        mask = attention_mask.unsqueeze(-1).expand_as(student_hidden).bool()
        s = torch.masked_select(student_hidden, mask).view(-1, student_hidden.size(-1))  # expect: TPU303
        t = torch.masked_select(teacher_hidden, mask).view(-1, teacher_hidden.size(-1))  # expect: TPU303
        target = s.new_ones(s.size(0))  # ok
        return F.cosine_embedding_loss(s, t, target)


def train_step(student, teacher, batch, loss_fn, optimizer):
    with torch.no_grad():
        teacher_logits = teacher(batch["input_ids"])
    student_logits = student(batch["input_ids"])
    loss = loss_fn(student_logits, teacher_logits, batch["labels"])
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.detach()  # ok
