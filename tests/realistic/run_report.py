"""Once-per-run evaluation report for a trained torch_xla model: metrics, plots, a JSON summary."""
import json
import sys

import matplotlib.pyplot as plt
import torch
import torch_xla


def main(checkpoint, data_path):
    device = torch_xla.device()
    state = torch.load(checkpoint, map_location="cpu")  # ok
    from model import Net

    model = Net().to(device)
    model.load_state_dict(state)
    model.eval()
    data = torch.load(data_path, map_location="cpu")  # ok
    with torch.no_grad():
        logits = model(data["x"].to(device))
    probs = logits.softmax(-1).cpu()  # ok
    preds = probs.argmax(-1)
    accuracy = (preds == data["y"]).float().mean().item()  # ok
    confidence = probs.max(-1).values.numpy()  # ok
    print(f"accuracy: {accuracy:.4f}, mean confidence: {confidence.mean():.3f}")  # ok
    print(logits)  # ok
    errors = torch.nonzero(preds != data["y"]).flatten().tolist()  # ok
    plt.hist(confidence, bins=50)
    plt.savefig("confidence.png")
    with open("report.json", "w") as f:
        json.dump({"accuracy": accuracy, "errors": errors[:100]}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
