# Pasted into an issue: "training is 40x slower on TPU v4 than on my 3090, the profile shows
# TransferFromDeviceTime every step". Excerpt of the loss and loop, no imports (as posted).

def focal_loss(logits, targets, alpha=0.25, gamma=2.0, ignore_index=-1):
    valid = targets != ignore_index
    logits, targets = logits[valid], targets[valid]  # expect: TPU302
    if targets.numel() == 0:  # debatable (the size of the masked result: the same sync as the line above)
        return logits.sum() * 0.0
    onehot = torch.zeros_like(logits).scatter_(1, targets.unsqueeze(1), 1.0)  # ok
    p = logits.sigmoid()
    pt = p * onehot + (1 - p) * (1 - onehot)
    w = alpha * onehot + (1 - alpha) * (1 - onehot)
    return (-w * (1 - pt) ** gamma * pt.clamp(min=1e-6).log()).sum() / max(1.0, valid.sum().item())  # expect: TPU101|TPU106


for epoch in range(num_epochs):
    for i, (images, targets) in enumerate(train_loader):  # expect: TPU607
        images, targets = images.to(device), targets.to(device)
        logits = model(images)
        loss = focal_loss(logits, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        xm.mark_step()  # expect: TPU601
        losses.append(loss.item())  # expect: TPU101
    print(f"epoch {epoch} mean loss {np.mean(losses):.4f}")  # ok
