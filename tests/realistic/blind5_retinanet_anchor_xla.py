"""RetinaNet-style detector fine-tune on COCO subsets with torch_xla multiprocessing: anchor
matching per image (variable number of boxes), focal + smooth-L1 losses, NMS in validation."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.ops import batched_nms, box_iou, sigmoid_focal_loss
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp

NUM_CLASSES = 80


def collate(batch):
    images = torch.stack([b[0] for b in batch])
    targets = [{"boxes": b[1]["boxes"], "labels": b[1]["labels"]} for b in batch]  # expect: TPUxxx
    return images, targets


def encode_boxes(gt, anchors):
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    gw, gh = gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
    dx = (gt[:, 0] + 0.5 * gw - anchors[:, 0] - 0.5 * aw) / aw
    dy = (gt[:, 1] + 0.5 * gh - anchors[:, 1] - 0.5 * ah) / ah
    return torch.stack([dx, dy, torch.log(gw / aw), torch.log(gh / ah)], dim=1)


def detection_loss(cls_logits, box_deltas, anchors, targets):
    cls_total, reg_total, num_pos = 0.0, 0.0, 0
    for i, target in enumerate(targets):
        gt_boxes = target["boxes"].to(anchors.device)
        gt_labels = target["labels"].to(anchors.device)
        iou = box_iou(gt_boxes, anchors)  # ok
        best_iou, matched = iou.max(dim=0)
        labels = gt_labels[matched].clone()
        labels[best_iou < 0.4] = NUM_CLASSES  # expect: TPU302
        labels[(best_iou >= 0.4) & (best_iou < 0.5)] = -1  # expect: TPU302
        valid = labels >= 0
        one_hot = F.one_hot(labels.clamp(min=0), NUM_CLASSES + 1)[:, :NUM_CLASSES].float()  # ok
        cls_total = cls_total + sigmoid_focal_loss(cls_logits[i][valid], one_hot[valid], reduction="sum")  # expect: TPU302
        pos = valid & (labels != NUM_CLASSES)
        pos_idx = torch.nonzero(pos).squeeze(1)  # expect: TPU301
        reg_target = encode_boxes(gt_boxes[matched[pos_idx]], anchors[pos_idx])
        reg_total = reg_total + F.smooth_l1_loss(box_deltas[i][pos_idx], reg_target, beta=1 / 9, reduction="sum")
        num_pos += pos_idx.numel()  # debatable
    return (cls_total + reg_total) / max(1, num_pos)


@torch.no_grad()
def postprocess(cls_logits, box_deltas, anchors, score_thresh=0.05):
    results = []
    for logits, deltas in zip(cls_logits, box_deltas):
        scores, labels = logits.sigmoid().max(dim=1)
        keep = scores > score_thresh
        boxes = decode(deltas[keep], anchors[keep])  # expect: TPU302
        idx = batched_nms(boxes, scores[keep], labels[keep], 0.5)  # expect: TPU215, TPU302
        results.append({"boxes": boxes[idx][:100].cpu(), "scores": scores[keep][idx][:100].cpu()})  # expect: TPU302
    return results


def decode(deltas, anchors):
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    cx = anchors[:, 0] + 0.5 * aw + deltas[:, 0] * aw
    cy = anchors[:, 1] + 0.5 * ah + deltas[:, 1] * ah
    w, h = aw * deltas[:, 2].exp(), ah * deltas[:, 3].exp()
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=1)


def _mp_fn(index, flags):
    device = xm.xla_device()  # expect: TPU602
    model = torchvision.models.detection.retinanet_resnet50_fpn(weights="DEFAULT").to(device)
    head, backbone = model.head, model.backbone
    anchors = torch.load("anchors_800.pt").to(device)  # expect: TPU406
    train_set = torchvision.datasets.CocoDetection("/data/coco/train2017", "/data/coco/ann/train.json")
    sampler = DistributedSampler(train_set, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal())  # expect: TPU611
    loader = DataLoader(train_set, batch_size=8, sampler=sampler, collate_fn=collate, drop_last=True)  # ok
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    for epoch in range(flags["epochs"]):
        for step, (images, targets) in enumerate(pl.MpDeviceLoader(loader, device)):
            features = list(backbone(images).values())
            out = head(features)
            loss = detection_loss(out["cls_logits"], out["bbox_regression"], anchors, targets)
            optimizer.zero_grad()
            loss.backward()
            xm.optimizer_step(optimizer)
            if step % 20 == 0:
                xm.add_step_closure(lambda l=loss: xm.master_print(f"loss {l.item():.4f}"))  # ok
        model.eval()
        images, _ = next(iter(loader))
        out = head(list(backbone(images.to(device)).values()))
        dets = postprocess(out["cls_logits"], out["bbox_regression"], anchors)
        xm.master_print(f"epoch {epoch}: {sum(len(d['boxes']) for d in dets)} detections on a probe batch")  # ok
        model.train()


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=({"epochs": 12},), nprocs=8)  # expect: TPU706
