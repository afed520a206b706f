"""PointNet++ (SSG) classification on ModelNet40, pure-PyTorch sampling and grouping (the repo's
CUDA extension is not built on the TPU VM), trained with torch_xla on a v4-8 host."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader

from modelnet import ModelNet40


def square_distance(src, dst):
    return (src.unsqueeze(2) - dst.unsqueeze(1)).pow(2).sum(-1)


def index_points(points, idx):
    B = points.shape[0]
    batch_indices = torch.arange(B, dtype=torch.long).to(points.device)  # expect: TPU407
    view = [B] + [1] * (idx.dim() - 1)
    return points[batch_indices.view(view).expand_as(idx), idx, :]


def farthest_point_sample(xyz, npoint):
    B, N, _ = xyz.shape
    centroids = torch.zeros(B, npoint, dtype=torch.long, device=xyz.device)
    distance = torch.ones(B, N).to(xyz.device) * 1e10  # expect: TPU407
    farthest = torch.randint(0, N, (B,), dtype=torch.long).to(xyz.device)  # expect: TPU407
    batch = torch.arange(B, device=xyz.device)
    for i in range(npoint):  # debatable (unrolled npoint times into one graph: slow compile, no recompile)
        centroids[:, i] = farthest
        centroid = xyz[batch, farthest, :].unsqueeze(1)
        dist = ((xyz - centroid) ** 2).sum(-1)
        distance = torch.minimum(distance, dist)  # ok
        farthest = distance.max(-1)[1]
    return centroids


def query_ball_point(radius, nsample, xyz, new_xyz):
    B, N, _ = xyz.shape
    S = new_xyz.shape[1]
    group_idx = torch.arange(N, dtype=torch.long, device=xyz.device).view(1, 1, N).repeat(B, S, 1)
    sqrdists = square_distance(new_xyz, xyz)
    group_idx[sqrdists > radius**2] = N  # expect: TPU302
    group_idx = group_idx.sort(dim=-1)[0][:, :, :nsample]  # ok
    group_first = group_idx[:, :, 0:1].expand(-1, -1, nsample)
    mask = group_idx == N
    group_idx[mask] = group_first[mask]  # expect: TPU302
    return group_idx


class SetAbstraction(nn.Module):
    def __init__(self, npoint, radius, nsample, in_ch, mlp):
        super().__init__()
        self.npoint, self.radius, self.nsample = npoint, radius, nsample
        layers, last = [], in_ch + 3
        for out in mlp:
            layers += [nn.Conv2d(last, out, 1), nn.BatchNorm2d(out), nn.ReLU()]
            last = out
        self.mlp = nn.Sequential(*layers)

    def forward(self, xyz, feats):
        new_xyz = index_points(xyz, farthest_point_sample(xyz, self.npoint))
        idx = query_ball_point(self.radius, self.nsample, xyz, new_xyz)
        grouped = index_points(xyz, idx) - new_xyz.unsqueeze(2)
        if feats is not None:
            grouped = torch.cat([grouped, index_points(feats, idx)], -1)
        out = self.mlp(grouped.permute(0, 3, 2, 1))
        return new_xyz, out.max(2)[0].transpose(1, 2)


class PointNet2(nn.Module):
    def __init__(self, num_classes=40):
        super().__init__()
        self.sa1 = SetAbstraction(512, 0.2, 32, 0, [64, 64, 128])
        self.sa2 = SetAbstraction(128, 0.4, 64, 128, [128, 128, 256])
        self.head = nn.Sequential(nn.Linear(256, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Dropout(0.4), nn.Linear(256, num_classes))

    def forward(self, xyz):
        xyz, f = self.sa1(xyz, None)
        xyz, f = self.sa2(xyz, f)
        return self.head(f.max(1)[0])


def main():
    device = torch_xla.device()
    train_loader = DataLoader(ModelNet40("train", npoints=1024), batch_size=32, shuffle=True, num_workers=4, drop_last=True)  # ok
    test_loader = DataLoader(ModelNet40("test", npoints=1024), batch_size=32, num_workers=4)  # ok
    model = PointNet2().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    for epoch in range(200):
        model.train()
        for pts, label in pl.MpDeviceLoader(train_loader, device):
            loss = F.cross_entropy(model(pts), label, label_smoothing=0.2)
            opt.zero_grad()
            loss.backward()
            xm.optimizer_step(opt)
        model.eval()
        preds, labels = [], []
        with torch.no_grad():
            for pts, label in pl.MpDeviceLoader(test_loader, device):
                preds.append(model(pts).argmax(-1))  # ok
                labels.append(label)
        preds, labels = torch.cat(preds), torch.cat(labels)
        per_class = torch.bincount(labels[preds == labels], minlength=40)  # expect: TPU304, TPU302
        class_acc = (per_class.float() / torch.bincount(labels, minlength=40).float()).mean()  # expect: TPU304
        print(f"epoch {epoch} loss {loss.item():.4f} class acc {class_acc.item():.4f}")  # ok
        np.save(f"pred_epoch{epoch}.npy", preds.cpu().numpy())  # ok


if __name__ == "__main__":
    main()
