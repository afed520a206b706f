"""COCO evaluation of an anchor-based single-stage detector on a TPU (torch_xla): decode, score filter, NMS, COCO json."""
import json

import torch
import torch.nn as nn
import torchvision
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from torch.utils.data import DataLoader

import torch_xla
import torch_xla.core.xla_model as xm

from detector import build_backbone, CocoDetection  # project-local


class AnchorHead(nn.Module):
    def __init__(self, channels=256, num_classes=80, strides=(8, 16, 32, 64, 128), sizes=(32, 64, 128, 256, 512)):
        super().__init__()
        self.strides, self.num_classes = strides, num_classes
        ratios = torch.tensor([0.5, 1.0, 2.0])
        base = []
        for size in sizes:
            w, h = size / ratios.sqrt(), size * ratios.sqrt()
            base.append(torch.stack([-w, -h, w, h], dim=1) / 2)  # ok
        self.register_buffer("base_anchors", torch.stack(base))  # ok
        self.cls = nn.Conv2d(channels, 3 * num_classes, 3, padding=1)
        self.reg = nn.Conv2d(channels, 3 * 4, 3, padding=1)

    def anchors(self, level, feat):
        fh, fw = feat.shape[-2:]
        stride = self.strides[level]
        sx = torch.arange(0, fw, dtype=torch.float32) * stride  # expect: TPU405
        sy = torch.arange(0, fh, dtype=torch.float32) * stride  # expect: TPU405
        yy, xx = torch.meshgrid(sy, sx, indexing="ij")
        shifts = torch.stack([xx, yy, xx, yy], dim=-1).reshape(-1, 1, 4)
        return (shifts + self.base_anchors[level].view(1, -1, 4)).reshape(-1, 4)

    def forward(self, feats):
        out = []
        for level, feat in enumerate(feats):
            B = feat.size(0)
            cls = self.cls(feat).permute(0, 2, 3, 1).reshape(B, -1, self.num_classes)
            reg = self.reg(feat).permute(0, 2, 3, 1).reshape(B, -1, 4)
            out.append((cls, reg, self.anchors(level, feat)))
        return out


def decode(reg, anchors):
    wh = anchors[:, 2:] - anchors[:, :2]
    ctr = anchors[:, :2] + 0.5 * wh
    pred_ctr = ctr + reg[..., :2] * wh
    pred_wh = wh * reg[..., 2:].clamp(max=4.135).exp()
    return torch.cat([pred_ctr - 0.5 * pred_wh, pred_ctr + 0.5 * pred_wh], dim=-1)


def postprocess(levels, image_idx, score_thresh=0.05, iou=0.5, max_det=100):
    boxes, scores, labels = [], [], []
    for cls, reg, anchors in levels:
        prob = cls[image_idx].sigmoid().flatten()
        keep = prob > score_thresh
        topk = prob[keep].topk(min(1000, int(keep.sum()))).indices  # expect: TPU302, TPU106
        idx = torch.where(keep)[0][topk]  # expect: TPU301
        boxes.append(decode(reg[image_idx], anchors)[idx // cls.size(-1)])
        scores.append(prob[idx])
        labels.append(idx % cls.size(-1))
    boxes, scores, labels = torch.cat(boxes), torch.cat(scores), torch.cat(labels)
    keep = torchvision.ops.batched_nms(boxes, scores, labels, iou)[:max_det]  # expect: TPU215
    return boxes[keep], scores[keep], labels[keep]


@torch.no_grad()
def run_coco_eval(ann_file, image_dir):
    device = torch_xla.device()
    backbone, head = build_backbone().to(device).eval(), AnchorHead().to(device).eval()
    dataset = CocoDetection(image_dir, ann_file, size=(800, 1216))
    loader = DataLoader(dataset, batch_size=8, num_workers=8)  # ok
    results = []
    for images, meta in loader:  # expect: TPU607
        levels = head(backbone(images.to(device)))
        for i, info in enumerate(meta):
            boxes, scores, labels = postprocess(levels, i)
            boxes = boxes / info["scale"]
            boxes[:, 2:] -= boxes[:, :2]
            for b, s, c in zip(boxes.tolist(), scores.tolist(), labels.tolist()):  # ok
                results.append({"image_id": info["id"], "bbox": b, "score": s, "category_id": dataset.label_to_cat[c]})
        xm.mark_step()  # expect: TPU601
    with open("/tmp/detections.json", "w") as f:
        json.dump(results, f)
    coco = COCO(ann_file)
    evaluator = COCOeval(coco, coco.loadRes("/tmp/detections.json"), "bbox")
    evaluator.evaluate()
    evaluator.accumulate()
    evaluator.summarize()
    return evaluator.stats[0]


if __name__ == "__main__":
    print(f"mAP {run_coco_eval('/data/coco/annotations/instances_val2017.json', '/data/coco/val2017'):.3f}")
