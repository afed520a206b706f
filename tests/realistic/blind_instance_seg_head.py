"""An anchor-free instance-segmentation head (FCOS boxes + mask branch) trained on TPU with torch_xla."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.ops import roi_align, sigmoid_focal_loss

import torch_xla


class Scale(nn.Module):
    def __init__(self, init=1.0):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(init))  # ok

    def forward(self, x):
        return x * self.scale


class InstanceSegHead(nn.Module):
    def __init__(self, in_channels=256, num_classes=80, strides=(8, 16, 32, 64, 128)):
        super().__init__()
        self.strides = strides
        self.cls_tower = nn.Sequential(*[nn.Sequential(nn.Conv2d(in_channels, in_channels, 3, padding=1), nn.GroupNorm(32, in_channels), nn.ReLU()) for _ in range(4)])
        self.box_tower = nn.Sequential(*[nn.Sequential(nn.Conv2d(in_channels, in_channels, 3, padding=1), nn.GroupNorm(32, in_channels), nn.ReLU()) for _ in range(4)])
        self.cls_logits = nn.Conv2d(in_channels, num_classes, 3, padding=1)
        self.bbox_pred = nn.Conv2d(in_channels, 4, 3, padding=1)
        self.centerness = nn.Conv2d(in_channels, 1, 3, padding=1)
        self.mask_head = nn.Sequential(nn.Conv2d(in_channels, 128, 3, padding=1), nn.ReLU(), nn.Conv2d(128, 1, 1))
        self.scales = nn.ModuleList([Scale() for _ in strides])
        nn.init.constant_(self.cls_logits.bias, -math.log((1 - 0.01) / 0.01))

    def locations(self, feature, stride):
        h, w = feature.shape[-2:]
        shifts_x = torch.arange(0, w * stride, stride, dtype=torch.float32)  # expect: TPU405
        shifts_y = torch.arange(0, h * stride, stride, dtype=torch.float32, device=feature.device)  # ok
        ys, xs = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
        return torch.stack([xs.reshape(-1), ys.reshape(-1)], dim=1) + stride // 2

    def forward(self, features):
        logits, boxes, centers, points = [], [], [], []
        for feat, scale, stride in zip(features, self.scales, self.strides):
            cls_feat = self.cls_tower(feat)
            box_feat = self.box_tower(feat)
            logits.append(self.cls_logits(cls_feat).flatten(2).transpose(1, 2))
            boxes.append(F.relu(scale(self.bbox_pred(box_feat))).flatten(2).transpose(1, 2) * stride)
            centers.append(self.centerness(box_feat).flatten(2).transpose(1, 2))
            points.append(self.locations(feat, stride))
        return torch.cat(logits, 1), torch.cat(boxes, 1), torch.cat(centers, 1), torch.cat(points, 0)  # ok

    def mask_logits(self, feature, rois):
        pooled = roi_align(feature, rois, output_size=(14, 14), spatial_scale=1.0 / 8, aligned=True)  # expect: TPU215
        return self.mask_head(pooled)


def fcos_loss(cls_logits, box_preds, centerness, points, targets, num_classes):
    labels = targets["labels"]
    gt_boxes = targets["boxes"]
    l = points[:, None, 0] - gt_boxes[None, :, 0]
    t = points[:, None, 1] - gt_boxes[None, :, 1]
    r = gt_boxes[None, :, 2] - points[:, None, 0]
    b = gt_boxes[None, :, 3] - points[:, None, 1]
    ltrb = torch.stack([l, t, r, b], dim=-1)
    inside = ltrb.min(dim=-1).values > 0
    areas = ((gt_boxes[:, 2] - gt_boxes[:, 0]) * (gt_boxes[:, 3] - gt_boxes[:, 1]))[None].expand_as(inside)
    areas = torch.where(inside, areas, torch.full_like(areas, float("inf")))  # ok
    min_area, matched = areas.min(dim=1)
    point_labels = torch.where(torch.isinf(min_area), torch.zeros_like(matched), labels[matched] + 1)  # ok
    pos_mask = point_labels > 0
    num_pos = pos_mask.sum().item()  # expect: TPU101
    cls_target = F.one_hot(point_labels, num_classes + 1)[:, 1:].float()
    loss_cls = sigmoid_focal_loss(cls_logits, cls_target, reduction="sum") / max(1.0, num_pos)
    pos_idx = torch.nonzero(pos_mask).squeeze(1)  # expect: TPU301
    pos_ltrb = ltrb[pos_idx, matched[pos_idx]]
    pos_pred = box_preds[pos_mask]  # expect: TPU302
    jitter = torch.rand(pos_idx.size(0), 4, device=box_preds.device) * 1e-3  # expect: TPU309
    loss_box = F.smooth_l1_loss(pos_pred + jitter, pos_ltrb, reduction="sum") / max(1.0, num_pos)
    center_target = torch.sqrt((pos_ltrb[:, [0, 2]].min(-1).values / pos_ltrb[:, [0, 2]].max(-1).values) * (pos_ltrb[:, [1, 3]].min(-1).values / pos_ltrb[:, [1, 3]].max(-1).values))
    loss_ctr = F.binary_cross_entropy_with_logits(centerness[pos_idx].squeeze(-1), center_target, reduction="sum") / max(1.0, num_pos)
    return loss_cls + loss_box + loss_ctr


def mask_loss(head, feature, targets):
    rois = torch.cat([targets["batch_idx"][:, None].float(), targets["boxes"]], dim=1)
    pred = head.mask_logits(feature, rois)
    gt = F.interpolate(targets["masks"][:, None].float(), size=(14, 14), mode="bilinear", align_corners=False)  # ok
    valid = targets["masks"].flatten(1).any(dim=1)  # ok
    loss = F.binary_cross_entropy_with_logits(pred, gt, reduction="none").mean(dim=(1, 2, 3))
    return (loss * valid.float()).sum() / valid.float().sum().clamp(min=1.0)  # ok


@torch.no_grad()
def postprocess(cls_logits, box_preds, points, score_thresh=0.05, iou_thresh=0.6, max_dets=100):
    scores, labels = cls_logits.sigmoid().max(dim=-1)
    candidates = torch.where(scores > score_thresh)  # expect: TPU301
    boxes = torch.cat([points - box_preds[..., :2], points + box_preds[..., 2:]], dim=-1)
    keep_scores = scores[scores > score_thresh]  # expect: TPU302
    keep = torchvision.ops.batched_nms(boxes[candidates], keep_scores, labels[candidates], iou_thresh)  # expect: TPU215
    return boxes[candidates][keep[:max_dets]], keep_scores[keep[:max_dets]]


def train_step(model, head, optimizer, images, targets, num_classes):
    features = model(images)
    cls_logits, box_preds, centerness, points = head(features)
    loss = fcos_loss(cls_logits[0], box_preds[0], centerness[0], points, targets, num_classes)
    loss = loss + mask_loss(head, features[0], targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    torch_xla.sync()
    return loss
