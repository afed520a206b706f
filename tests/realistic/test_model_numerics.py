"""Numerical tests of the model zoo (unittest), run in CI on CPU and on accelerator runners."""
import unittest

import torch

from zoo import build_model

DEVICE = torch.device("cuda")  # expect: TPU401


class TestModelNumerics(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.model = build_model("resnet18").eval()

    def test_forward_is_deterministic(self):
        x = torch.randn(2, 3, 224, 224)
        a = self.model(x)
        b = self.model(x)
        self.assertTrue(torch.equal(a, b))
        self.assertLess((a - b).abs().max().item(), 1e-6)  # ok

    def test_bicubic_resize_matches_pillow(self):
        x = torch.rand(1, 3, 32, 32)
        y = torch.nn.functional.interpolate(x, size=(64, 64), mode="bicubic")  # ok
        self.assertEqual(y.shape, (1, 3, 64, 64))

    def test_float64_reference(self):
        x = torch.randn(4, 3, 32, 32, dtype=torch.float64)  # ok
        ref = self.model.double()(x)  # ok
        self.assertFalse(torch.isnan(ref).any())  # ok

    @unittest.skipUnless(torch.cuda.is_available(), "CUDA required")
    def test_half_precision_on_gpu(self):
        model = self.model.cuda().half()  # ok
        x = torch.randn(2, 3, 224, 224, device="cuda", dtype=torch.float16)  # ok
        self.assertEqual(model(x).dtype, torch.float16)
        torch.cuda.synchronize()  # ok

    def test_on_accelerator(self):
        model = self.model.to(DEVICE)
        x = torch.randn(2, 3, 224, 224).cuda()  # expect: TPU403
        torch.cuda.synchronize()  # expect: TPU404
        self.assertEqual(model(x).shape, (2, 1000))


if __name__ == "__main__":
    unittest.main()
