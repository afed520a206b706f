"""Quantization-aware fine-tuning of MobileNetV2 for an int8 edge runtime: hand-written
fake-quant modules with EMA min/max observers, per-channel weight quantization with a
straight-through estimator, batch-norm folding frozen after three epochs, and an int8 export at
the end. Runs on a TPU v5e with torch_xla (one process, MpDeviceLoader for training)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader

from imagenet_data import ImageNetTrain, ImageNetVal
from mobilenet_qat import build_qat_mobilenet


class FakeQuantize(nn.Module):
    def __init__(self, num_bits=8, momentum=0.01):
        super().__init__()
        self.qmin, self.qmax, self.momentum = 0, 2**num_bits - 1, momentum
        self.register_buffer("min_val", torch.tensor(float("inf")))  # ok
        self.register_buffer("max_val", torch.tensor(float("-inf")))  # ok
        self.register_buffer("enabled", torch.tensor([1], dtype=torch.uint8))  # ok

    def forward(self, x):
        if self.enabled[0] == 0:  # expect: TPU107
            return x
        if self.training:
            cur_min, cur_max = x.detach().min(), x.detach().max()
            if torch.isinf(self.min_val):  # expect: TPU107
                self.min_val.copy_(cur_min)
                self.max_val.copy_(cur_max)
            else:
                self.min_val.mul_(1 - self.momentum).add_(cur_min * self.momentum)  # ok
                self.max_val.mul_(1 - self.momentum).add_(cur_max * self.momentum)  # ok
        scale = (self.max_val - self.min_val).clamp(min=1e-8) / (self.qmax - self.qmin)
        zero_point = (self.qmin - torch.round(self.min_val / scale)).clamp(self.qmin, self.qmax)
        return torch.fake_quantize_per_tensor_affine(x, scale.item(), int(zero_point.item()), self.qmin, self.qmax)  # expect: TPU101


def fake_quant_weight(w, num_bits=8):
    qmax = 2 ** (num_bits - 1) - 1
    scale = w.detach().abs().amax(dim=(1, 2, 3), keepdim=True).clamp(min=1e-8) / qmax
    q = torch.clamp(torch.round(w / scale), -qmax - 1, qmax)
    return w + (q * scale - w).detach()  # ok


class QConvBN(nn.Module):
    def __init__(self, conv, bn):
        super().__init__()
        self.conv, self.bn, self.act_fq = conv, bn, FakeQuantize()
        self.freeze_bn = False

    def forward(self, x):
        if self.freeze_bn:  # ok
            std = torch.sqrt(self.bn.running_var + self.bn.eps)
            w = self.conv.weight * (self.bn.weight / std).reshape(-1, 1, 1, 1)
            b = self.bn.bias - self.bn.weight * self.bn.running_mean / std
            y = F.conv2d(x, fake_quant_weight(w), b, self.conv.stride, self.conv.padding, groups=self.conv.groups)
        else:
            y = self.bn(F.conv2d(x, fake_quant_weight(self.conv.weight), None, self.conv.stride, self.conv.padding, groups=self.conv.groups))
        return self.act_fq(F.relu6(y))


def export_int8(model, path):
    int8_state = {}
    for name, m in model.named_modules():
        if isinstance(m, QConvBN):
            w = m.conv.weight.detach().cpu()  # ok
            scale = w.abs().amax(dim=(1, 2, 3)) / 127
            int8_state[name + ".weight"] = torch.round(w / scale.reshape(-1, 1, 1, 1)).to(torch.int8)  # ok
            int8_state[name + ".scale"] = scale.double()  # ok (host tensor, the runtime's format)
            int8_state[name + ".act_scale"] = ((m.act_fq.max_val - m.act_fq.min_val) / 255).item()  # ok
    torch.save(int8_state, path)  # ok


def main():
    device = torch_xla.device()
    model = build_qat_mobilenet(num_classes=1000, conv_bn=QConvBN, fake_quant=FakeQuantize).to(device)
    state = torch.load("mobilenet_v2_fp32.pth")  # expect: TPU406
    model.load_state_dict(state, strict=False)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, weight_decay=4e-5)
    train_loader = DataLoader(ImageNetTrain(), batch_size=256, shuffle=True, num_workers=16, drop_last=True)  # ok
    val_loader = DataLoader(ImageNetVal(), batch_size=500, num_workers=8)  # ok
    train_device_loader = pl.MpDeviceLoader(train_loader, device)

    for epoch in range(8):
        if epoch == 3:
            for m in model.modules():
                if isinstance(m, QConvBN):
                    m.freeze_bn = True  # ok
        model.train()
        for step, (images, labels) in enumerate(train_device_loader):
            loss = F.cross_entropy(model(images), labels, label_smoothing=0.1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 200 == 0:
                xm.add_step_closure(lambda s=step, l=loss: print(f"epoch {epoch} step {s} loss {l.item():.3f}"))  # ok
        model.eval()
        correct, total = 0, 0
        with torch.no_grad():
            for images, labels in val_loader:  # expect: TPU607
                images, labels = images.to(device), labels.to(device)
                correct += (model(images).argmax(1) == labels).sum().item()  # expect: TPU101
                total += labels.size(0)
        print(f"epoch {epoch}: int8-simulated top1 {correct / total:.4f}")  # ok
    export_int8(model, "mobilenet_v2_int8.pt")


if __name__ == "__main__":
    main()
