#!/usr/bin/env python
# coding: utf-8

# # Fine-tuning a ViT on Oxford Pets on a Colab TPU
# Exported from a notebook: cells run top to bottom.

# In[1]:


import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torchvision.transforms as T
from PIL import Image
from torch.utils.data import DataLoader
from torchvision.datasets import OxfordIIITPet
from transformers import ViTForImageClassification

import torch_xla
import torch_xla.core.xla_model as xm

get_ipython().run_line_magic("matplotlib", "inline")


# In[2]:


device = xm.xla_device()  # expect: TPU602
print(device)


# In[3]:


tf = T.Compose([T.Resize((224, 224)), T.ToTensor(), T.Normalize([0.5] * 3, [0.5] * 3)])
train_ds = OxfordIIITPet("/content/data", split="trainval", transform=tf, download=True)
test_ds = OxfordIIITPet("/content/data", split="test", transform=tf, download=True)
train_dl = DataLoader(train_ds, batch_size=32, shuffle=True, num_workers=2)  # expect: TPU306
test_dl = DataLoader(test_ds, batch_size=64, num_workers=2)  # ok
xb, yb = next(iter(train_dl))
print(xb.shape, yb[:8])  # ok


# In[4]:


model = ViTForImageClassification.from_pretrained("google/vit-base-patch16-224-in21k", num_labels=37)
model = model.to(device)
opt = torch.optim.AdamW(model.parameters(), lr=3e-5)
loss_fn = nn.CrossEntropyLoss()


# In[5]:


losses = []
model.train()
for epoch in range(3):
    for xb, yb in train_dl:  # expect: TPU605, TPU607
        xb, yb = xb.to(device), yb.to(device)
        loss = loss_fn(model(pixel_values=xb).logits, yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())  # expect: TPU101
    print(f"epoch {epoch}: {np.mean(losses[-len(train_dl):]):.4f}")  # ok


# In[6]:


plt.plot(losses)
plt.yscale("log")


# In[7]:


model.eval()
correct = 0
with torch.no_grad():
    for xb, yb in test_dl:  # expect: TPU607
        preds = model(pixel_values=xb.to(device)).logits.argmax(-1)
        correct += (preds.cpu() == yb).sum().item()  # expect: TPU102
print(f"test accuracy: {correct / len(test_ds):.3f}")  # ok


# In[8]:


img = Image.open("/content/my_cat.jpg").convert("RGB").resize((224, 224))
x = torch.from_numpy(np.asarray(img) / 255.0).permute(2, 0, 1).unsqueeze(0)  # expect: TPU502
x = (x - 0.5) / 0.5
probs = model(pixel_values=x.to(device)).logits.softmax(-1)
print(probs.topk(3))  # ok


# In[9]:


torch.save(model.state_dict(), "/content/vit_pets.pt")  # expect: TPU408
