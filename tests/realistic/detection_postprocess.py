"""Post-processing for a single-stage detector (FCOS/RetinaNet style), called from forward at inference."""
import torch
import torch.nn as nn
from torchvision.ops import batched_nms, box_iou


class DetectionHead(nn.Module):
    def __init__(self, num_classes, score_thresh=0.05, nms_thresh=0.6, detections_per_img=100, topk_candidates=1000):
        super().__init__()
        self.num_classes = num_classes
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def postprocess(self, logits, boxes):
        detections = []
        for logits_per_image, boxes_per_image in zip(logits, boxes):
            scores = torch.sigmoid(logits_per_image).flatten()
            keep = scores > self.score_thresh
            scores = scores[keep]  # expect: TPU302
            topk_idxs = torch.where(keep)[0]  # expect: TPU301
            num_topk = min(self.topk_candidates, topk_idxs.size(0))
            scores, idxs = scores.topk(num_topk)  # ok
            topk_idxs = topk_idxs[idxs]
            anchor_idxs = torch.div(topk_idxs, self.num_classes, rounding_mode="floor")
            labels = topk_idxs % self.num_classes
            selected = boxes_per_image[anchor_idxs]
            kept = batched_nms(selected, scores, labels, self.nms_thresh)  # expect: TPU215
            kept = kept[: self.detections_per_img]
            detections.append({"boxes": selected[kept], "scores": scores[kept], "labels": labels[kept]})
        return detections

    def forward(self, features, logits, boxes, anchors=None, targets=None):
        if self.training:
            matched = [match_anchors(anchors, t["boxes"], t["labels"]) for t in targets]
            return features, matched
        return self.postprocess(logits, boxes)


def match_anchors(anchors, gt_boxes, gt_labels, iou_thresh=0.5):
    iou = box_iou(gt_boxes, anchors)  # ok
    best_iou, best_gt = iou.max(dim=0)
    labels = gt_labels[best_gt]
    labels[best_iou < iou_thresh] = 0  # expect: TPU302
    classes_present = torch.unique(labels)  # expect: TPU304
    return labels, classes_present
