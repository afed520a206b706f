"""Fine-tune torchvision's Mask R-CNN on a custom dataset, ported to PyTorch/XLA."""
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torchvision
from torchvision.models.detection import maskrcnn_resnet50_fpn
from torchvision.ops import MultiScaleRoIAlign


def build(num_classes):
    model = maskrcnn_resnet50_fpn(weights="DEFAULT")
    model.roi_heads.mask_roi_pool = MultiScaleRoIAlign(["0", "1", "2", "3"], output_size=14, sampling_ratio=2)  # expect: TPU215
    in_features = model.roi_heads.box_predictor.cls_score.in_features
    model.roi_heads.box_predictor = torchvision.models.detection.faster_rcnn.FastRCNNPredictor(in_features, num_classes)
    return model


def train_one_epoch(model, loader, optimizer):
    device = torch_xla.device()
    model.train()
    for images, targets in loader:  # expect: TPU607
        images = [img.to(device) for img in images]
        targets = [{k: v.to(device) for k, v in t.items()} for t in targets]
        loss_dict = model(images, targets)
        losses = sum(loss for loss in loss_dict.values())
        optimizer.zero_grad()
        losses.backward()
        optimizer.step()
        torch_xla.sync()
        positives = [torch.where(t["labels"] > 0)[0] for t in targets]  # expect: TPU301
        xm.master_print({k: round(v.item(), 4) for k, v in loss_dict.items()})  # expect: TPU101
