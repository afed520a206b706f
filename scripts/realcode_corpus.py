"""Real PyTorch code for the real-code harness and the blind precision review.

Pinned releases come from PyPI with `pip download --no-deps` into a cache that survives runs
(`.ci-cache/realcode/` by default, git-ignored); their `.py` files are unpacked into a scratch
directory. Pinned commits of public repositories are read from a local git directory (a mirror or
a clone made into the cache). Nothing downloaded here is ever committed.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_CACHE = ROOT / ".ci-cache" / "realcode"

# name -> (pip requirement, extra `pip download` arguments). torchvision ships only binary wheels
# per platform and Python: pin the platform so every machine downloads the same file.
RELEASES: dict[str, tuple[str, list[str]]] = {
    "diffusers": ("diffusers==0.31.0", []),
    "transformers": ("transformers==4.46.3", []),
    "accelerate": ("accelerate==1.1.1", []),
    "lightning": ("lightning==2.4.0", []),
    "torchvision": (
        "torchvision==0.20.1",
        ["--only-binary", ":all:", "--platform", "manylinux1_x86_64", "--python-version", "3.11",
         "--implementation", "cp", "--abi", "cp311"],
    ),
    "timm": ("timm==1.0.11", []),
}

# Held-out code bases for blind precision passes (docs/precision.md, sixth pass): never used by the
# real-code harness or CI, only selected by name with `precision-sample.py --bases`. Pure-Python
# wheels, so every machine downloads the same file.
def pure_python_wheels(requirements: list[str]) -> dict[str, tuple[str, list[str]]]:
    """name -> (requirement, pip options) for pinned releases named by their distribution,
    downloaded as wheels only."""
    return {requirement.split("==")[0]: (requirement, ["--only-binary", ":all:"]) for requirement in requirements}


HELD_OUT_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "peft==0.13.2",
    "trl==0.12.1",
    "sentence-transformers==3.3.1",
    "torchmetrics==1.6.0",
    "open_clip_torch==2.29.0",
    "pytorch-ignite==0.5.1",
    "kornia==0.7.4",
    "torchtune==0.4.0",
])

# The seventh pass's held-out code bases (docs/precision.md, seed 9606): a second set no session had
# looked at, selected with `precision-sample.py --bases held-out-2`; like HELD_OUT_RELEASES, never
# used by the real-code harness or CI. Pure-Python wheels.
HELD_OUT_2_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "monai==1.4.0",
    "speechbrain==1.0.2",
    "pyannote.audio==3.3.2",
    "mmengine==0.10.5",
    "torch_geometric==2.6.1",
    "pyro-ppl==1.9.1",
])

# The eighth pass's held-out code bases (docs/precision.md, seed 10707): a third set no session had
# looked at, selected with `precision-sample.py --bases held-out-3`; never used by the real-code
# harness or CI. Pure-Python wheels; their wheel files are named by the distribution
# (pytorch_metric_learning-2.7.0-..., stable_baselines3-..., mosaicml-...), the import packages
# inside are pytorch_metric_learning, stable_baselines3 and composer.
HELD_OUT_3_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "ultralytics==8.3.40",
    "fastai==2.7.18",
    "mosaicml==0.27.0",
    "gpytorch==1.13",
    "pytorch-metric-learning==2.7.0",
    "stable-baselines3==2.4.0",
])

# The ninth pass's held-out code bases (docs/precision.md, seed 11808): a fourth set no session had
# looked at, selected with `precision-sample.py --bases held-out-4` together with the TPU-aware
# repository of HELD_OUT_4_REPOSITORIES; never used by the real-code harness or CI. Pure-Python
# wheels (py3-none-any); the import packages are segmentation_models_pytorch, flair, skorch,
# pytorch_forecasting, lightly and espnet (espnet2 too).
HELD_OUT_4_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "segmentation-models-pytorch==0.3.4",
    "flair==0.14.0",
    "skorch==1.0.0",
    "pytorch-forecasting==1.2.0",
    "lightly==1.5.13",
    "espnet==202412",
])

# The tenth pass's held-out code bases (docs/precision.md, seed 12909): a fifth set no session had
# looked at, selected with `precision-sample.py --bases held-out-5` together with the TPU-aware
# repository of HELD_OUT_5_REPOSITORIES; never used by the real-code harness or CI. Pure-Python
# wheels (py3-none-any); the import packages are torchgeo, neuralforecast, tianshou, x_transformers,
# pykeen, avalanche and asteroid.
HELD_OUT_5_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "torchgeo==0.6.2",
    "neuralforecast==1.7.5",
    "tianshou==1.1.0",
    "x-transformers==1.42.24",
    "pykeen==1.11.0",
    "avalanche-lib==0.6.0",
    "asteroid==0.7.0",
])

# The eleventh pass's held-out code bases (docs/precision.md, seed 13717): a sixth set no session had
# looked at, selected with `precision-sample.py --bases held-out-6` together with the TPU-aware
# repository of HELD_OUT_6_REPOSITORIES; never used by the real-code harness or CI. Pure-Python
# wheels (py3-none-any); the import packages are pytorch_tabnet, mmdet, pl_bolts,
# denoising_diffusion_pytorch, braindecode, imagen_pytorch and litgpt.
HELD_OUT_6_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "pytorch-tabnet==4.1.0",
    "mmdet==3.3.0",
    "lightning-bolts==0.7.0",
    "denoising-diffusion-pytorch==2.1.1",
    "braindecode==0.8.1",
    "imagen-pytorch==1.26.3",
    "litgpt==0.5.3",
])

# The twelfth pass's held-out code bases (docs/precision.md, seed 99207): a seventh set no session
# had looked at, selected with `precision-sample.py --bases held-out-7` together with the TPU-aware
# repository of HELD_OUT_7_REPOSITORIES; never used by the real-code harness or CI. Pure-Python
# wheels (py3-none-any; yolov5's is tagged py37.py38.py39.py310-none-any); the import packages are
# pytorch_widedeep, dalle2_pytorch, lavis, audiolm_pytorch, pytorch_tabular, mmseg and yolov5.
HELD_OUT_7_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "pytorch-widedeep==1.7.0",
    "dalle2-pytorch==1.15.6",
    "salesforce-lavis==1.0.2",
    "audiolm-pytorch==2.4.0",
    "pytorch-tabular==1.2.0",
    "mmsegmentation==1.2.2",
    "yolov5==7.0.14",
])

# The thirteenth pass's held-out code bases (docs/precision.md, seed 10498): an eighth set no
# session had looked at, selected with `precision-sample.py --bases held-out-8` together with the
# TPU-aware repository of HELD_OUT_8_REPOSITORIES; never used by the real-code harness or CI.
# Pure-Python wheels (py3-none-any); the import packages are k_diffusion, stable_audio_tools,
# vector_quantize_pytorch, e2_tts_pytorch, vit_pytorch, torch_optimizer and meshgpt_pytorch.
HELD_OUT_8_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "k-diffusion==0.1.1.post1",
    "stable-audio-tools==0.0.19",
    "vector-quantize-pytorch==1.32.0",
    "e2-tts-pytorch==2.2.2",
    "vit-pytorch==1.26.14",
    "torch-optimizer==0.3.0",
    "meshgpt-pytorch==1.8.1",
])

# The fourteenth pass's held-out code bases (docs/precision.md, seed 21498): a ninth set no session
# had looked at, selected with `precision-sample.py --bases held-out-9` together with the TPU-aware
# repository of HELD_OUT_9_REPOSITORIES; never used by the real-code harness or CI. Pure-Python
# wheels (py3-none-any); the import packages are esm, dac, muse_maskgit_pytorch, voicebox_pytorch,
# naturalspeech2_pytorch, schedulefree and torchdiffeq.
HELD_OUT_9_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "fair-esm==2.0.0",
    "descript-audio-codec==1.0.0",
    "muse-maskgit-pytorch==0.3.5",
    "voicebox-pytorch==0.5.0",
    "naturalspeech2-pytorch==0.1.8",
    "schedulefree==1.4.1",
    "torchdiffeq==0.2.5",
])

# The fifteenth pass's held-out code bases (docs/precision.md, seed 24357): a tenth set no session
# had looked at, selected with `precision-sample.py --bases held-out-10` together with the
# TPU-aware repository of HELD_OUT_10_REPOSITORIES; never used by the real-code harness or CI.
# Pure-Python wheels (py3-none-any; mmpretrain's and mmpose's are py2.py3-none-any); the import
# packages are alphafold3_pytorch, mmpretrain, mmpose, nerfstudio, open_flamingo,
# soundstorm_pytorch and magvit2_pytorch.
HELD_OUT_10_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "alphafold3-pytorch==0.7.11",
    "mmpretrain==1.2.0",
    "mmpose==1.3.2",
    "nerfstudio==1.1.5",
    "open-flamingo==2.0.1",
    "soundstorm-pytorch==0.4.11",
    "magvit2-pytorch==0.5.1",
])

# The sixteenth pass's held-out code bases (docs/precision.md, sixteenth pass): an eleventh set no
# session had looked at, selected with `precision-sample.py --bases held-out-11` together with the
# TPU-aware repository of HELD_OUT_11_REPOSITORIES; never used by the real-code harness or CI.
# Pure-Python wheels (py3-none-any; mmagic's and mmaction2's are py2.py3-none-any); the import
# packages are mmagic, mmaction, super_gradients, lerobot, demucs, phenaki_pytorch and
# gigagan_pytorch.
HELD_OUT_11_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "mmagic==1.2.0",
    "mmaction2==1.2.0",
    "super-gradients==3.7.1",
    "lerobot==0.3.3",
    "demucs==4.1.0",
    "phenaki-pytorch==0.5.0",
    "gigagan-pytorch==0.3.0",
])

# The seventeenth pass's held-out code bases (docs/precision.md, seventeenth pass): a twelfth set no
# session had looked at, selected with `precision-sample.py --bases held-out-12` together with the
# TPU-aware repository of HELD_OUT_12_REPOSITORIES; never used by the real-code harness or CI.
# Pure-Python wheels (py3-none-any; mmocr's is py2.py3-none-any); the import packages are mmocr,
# mmdet3d, allennlp, f5_tts, chronos, musiclm_pytorch and transfusion_pytorch.
HELD_OUT_12_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "mmocr==1.0.1",
    "mmdet3d==1.4.0",
    "allennlp==2.10.1",
    "f5-tts==1.1.22",
    "chronos-forecasting==2.3.2",
    "musiclm-pytorch==0.2.8",
    "transfusion-pytorch==0.20.0",
])

# The eighteenth pass's held-out code bases (docs/precision.md, eighteenth pass): a thirteenth set no
# session had looked at, selected with `precision-sample.py --bases held-out-13` together with the
# TPU-aware repository of HELD_OUT_13_REPOSITORIES; never used by the real-code harness or CI.
# Pure-Python wheels (py3-none-any); the import packages are nnunetv2, olmo (with hf_olmo), mace,
# d3rlpy, rfdetr, gliner and stanza.
HELD_OUT_13_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "nnunetv2==2.8.1",
    "ai2-olmo==0.6.0",
    "mace-torch==0.3.16",
    "d3rlpy==2.8.1",
    "rfdetr==1.11.2",
    "gliner==0.2.29",
    "stanza==1.15.0",
])

# The nineteenth pass's held-out code bases (docs/precision.md, nineteenth pass): a fourteenth set no
# session had looked at, selected with `precision-sample.py --bases held-out-14` together with the
# TPU-aware repository of HELD_OUT_14_REPOSITORIES; never used by the real-code harness or CI.
# Pure-Python wheels (py3-none-any); the import packages are recbole, sb3_contrib, poutyne, setfit,
# openunmix, torch_geometric_temporal and effdet.
HELD_OUT_14_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "recbole==1.2.1",
    "sb3-contrib==2.9.2",
    "poutyne==1.19.0",
    "setfit==1.2.0",
    "openunmix==1.3.0",
    "torch-geometric-temporal==0.56.2",
    "effdet==0.4.1",
])

# The twentieth pass's held-out code bases (docs/precision.md, twentieth pass): a fifteenth set no
# session had looked at, selected with `precision-sample.py --bases held-out-15` together with the
# TPU-aware repository of HELD_OUT_15_REPOSITORIES; never used by the real-code harness or CI.
# Pure-Python wheels (py2/py3-none-any); the import packages are catalyst, rl_games, schnetpack,
# ctgan, simpletransformers, pythae and vocos.
HELD_OUT_15_RELEASES: dict[str, tuple[str, list[str]]] = pure_python_wheels([
    "catalyst==22.4",
    "rl-games==1.6.5",
    "schnetpack==2.1.1",
    "ctgan==0.12.1",
    "simpletransformers==0.70.8",
    "pythae==0.1.2",
    "vocos==0.1.0",
])

# name -> (GitHub owner/name, commit).
REPOSITORIES: dict[str, tuple[str, str]] = {
    "pytorch-xla": ("pytorch/xla", "41398bfff334fc8d3b1c00be6ea8cc5411f6d6bf"),
    "pytorch-examples": ("pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8"),
    "optimum-tpu": ("huggingface/optimum-tpu", "27f8edea3ca5f4221f6cede70259262b58937755"),
}

# The ninth pass's TPU-aware repository: a fork of AI-Hypercomputer/torchprime (torch_xla models
# and trainers, plus the fork's inference and evaluation code). Kept out of REPOSITORIES so the
# default `--bases` (the CI code bases) does not change.
HELD_OUT_4_REPOSITORIES: dict[str, tuple[str, str]] = {
    "torchprime": ("weirayao/torchprime", "a388e24f8066874544c6cab005bfc69d3c1515fe"),
}
# The tenth pass's TPU-aware repository: Vision Transformer training on torch_xla.
HELD_OUT_5_REPOSITORIES: dict[str, tuple[str, str]] = {
    "vision_transformers_torch_xla": ("TaiMingLu/vision_transformers_torch_xla",
                                      "1315c663cfb36b104eeb7df84f432d7c1d4a32b9"),
}
# The eleventh pass's TPU-aware repository: Llama 2 inference on torch_xla (the branch
# llama2-google-next-inference of pytorch-tpu/llama: SPMD/model-parallel generation).
HELD_OUT_6_REPOSITORIES: dict[str, tuple[str, str]] = {
    "pytorch-tpu-llama": ("pytorch-tpu/llama", "d02092d102baf509f37b8085b38115a1ee09bbe0"),
}
# The twelfth pass's TPU-aware repository: LLaMA pretraining, finetuning and generation on Lightning
# Fabric, with TPU (XLA) paths in generation and the model (howto/tpus.md).
HELD_OUT_7_REPOSITORIES: dict[str, tuple[str, str]] = {
    "lit-llama": ("Lightning-AI/lit-llama", "2a464de2a1d2f266614d15091d3d7f30330c3ede"),
}
# The thirteenth pass's TPU-aware repository: mlpug, a training framework with PyTorch, PyTorch/XLA
# (mlpug/pytorch/xla: trainers, evaluation, multi-processing) and other back ends, and its examples.
HELD_OUT_8_REPOSITORIES: dict[str, tuple[str, str]] = {
    "mlpug": ("nuhame/mlpug", "8d291f4796ba754f1055314bf40b70b9bcd089b5"),
}
# The fourteenth pass's TPU-aware repository: MoCo v3 and SimCLR ViT pretraining and linear
# evaluation on torch_xla (TPU pods: xla_multiprocessing, a cross-replica SyncBatchNorm).
HELD_OUT_9_REPOSITORIES: dict[str, tuple[str, str]] = {
    "moco_v3_tpu": ("ronghanghu/moco_v3_tpu", "4766876857e6a797c897b3f17be6494cc143c8f4"),
}
# The fifteenth pass's TPU-aware repository: a 10-billion-parameter ViT trained with torch_xla's
# FSDP (XlaFullyShardedDataParallel, gradient checkpointing, xmp.spawn on TPU pods).
HELD_OUT_10_REPOSITORIES: dict[str, tuple[str, str]] = {
    "vit_10b_fsdp_example": ("ronghanghu/vit_10b_fsdp_example", "d672ec7fa63783069a6795c5af5058a47d71132d"),
}
# The sixteenth pass's TPU-aware repository: MonArc, energy-based language models trained on TPUs
# with torch_xla (xmp.spawn, XLA trainers, packed and WebDataset loaders).
HELD_OUT_11_REPOSITORIES: dict[str, tuple[str, str]] = {
    "MonArc": ("aklein4/MonArc", "2c995fa953cac1e400534c7d44c8756b9b3413b4"),
}
# The seventeenth pass's TPU-aware repository: tpuTraining, language-model training on TPUs with
# torch_xla (SPMD meshes, xmp.spawn, parallel loaders, its training utilities).
HELD_OUT_12_REPOSITORIES: dict[str, tuple[str, str]] = {
    "tpuTraining": ("TobiasStd/tpuTraining", "49e40aa02b246f09b8edb3944fb4f6e1ef4515ac"),
}
# The eighteenth pass's TPU-aware repository: pytorch-tpu/stable-diffusion, latent diffusion
# (CompVis's code) adapted to train and sample on TPUs (main_tpu.py with Lightning's TPU
# accelerator, device choices for XLA in the samplers and scripts).
HELD_OUT_13_REPOSITORIES: dict[str, tuple[str, str]] = {
    "pytorch-tpu-stable-diffusion": ("pytorch-tpu/stable-diffusion", "978da4c625a712a01ee066d019a0b0d2319cd8b3"),
}
# The nineteenth pass's TPU-aware repository: streamingP2P, a CosyVoice fork (text-to-speech: LLM,
# flow matching, HiFi-GAN) with a torch_xla training path (cosyvoice/bin/tpu_train.py with
# xmp.spawn, the TPU executor and training utilities).
HELD_OUT_14_REPOSITORIES: dict[str, tuple[str, str]] = {
    "streamingP2P": ("vodaiphuoc/streamingP2P", "928a99523270463606d3ec1756a4916605bcde45"),
}
# The twentieth pass's TPU-aware repository: DistillationExperiments-TPU, knowledge-distillation
# experiments (CIFAR image classifiers and SST/Cornell NLP students) trained on TPUs with torch_xla
# (ParallelLoader, xm.optimizer_step, xmp.spawn).
HELD_OUT_15_REPOSITORIES: dict[str, tuple[str, str]] = {
    "DistillationExperiments-TPU": ("NolanGC/DistillationExperiments-TPU",
                                    "eb023aaf206233ad6a9f87062d868cc92eb12ad2"),
}
ALL_REPOSITORIES: dict[str, tuple[str, str]] = {**REPOSITORIES, **HELD_OUT_4_REPOSITORIES,
                                                **HELD_OUT_5_REPOSITORIES, **HELD_OUT_6_REPOSITORIES,
                                                **HELD_OUT_7_REPOSITORIES, **HELD_OUT_8_REPOSITORIES,
                                                **HELD_OUT_9_REPOSITORIES, **HELD_OUT_10_REPOSITORIES,
                                                **HELD_OUT_11_REPOSITORIES, **HELD_OUT_12_REPOSITORIES,
                                                **HELD_OUT_13_REPOSITORIES, **HELD_OUT_14_REPOSITORIES,
                                                **HELD_OUT_15_REPOSITORIES}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def download_release(name: str, cache: pathlib.Path) -> pathlib.Path:
    """The cached wheel or sdist of a pinned release, downloaded once."""
    requirement, extra = {**RELEASES, **HELD_OUT_RELEASES, **HELD_OUT_2_RELEASES, **HELD_OUT_3_RELEASES,
                        **HELD_OUT_4_RELEASES, **HELD_OUT_5_RELEASES, **HELD_OUT_6_RELEASES, **HELD_OUT_7_RELEASES,
                        **HELD_OUT_8_RELEASES, **HELD_OUT_9_RELEASES, **HELD_OUT_10_RELEASES,
                        **HELD_OUT_11_RELEASES, **HELD_OUT_12_RELEASES, **HELD_OUT_13_RELEASES,
                        **HELD_OUT_14_RELEASES, **HELD_OUT_15_RELEASES}[name]
    distribution, version = requirement.split("==")
    # Wheel names normalise both `-` and `.` of the distribution to `_` (pyannote.audio ->
    # pyannote_audio-3.3.2-...whl).
    prefix = f"{distribution.replace('-', '_').replace('.', '_')}-{version}"
    cache.mkdir(parents=True, exist_ok=True)

    def cached() -> list[pathlib.Path]:
        # The version must end at the prefix: gpytorch-1.13 is not gpytorch-1.13.1.
        return sorted(p for p in cache.iterdir()
                      if p.name.startswith(prefix) and p.suffix in (".whl", ".gz", ".zip")
                      and (p.name[len(prefix):][:1] == "-" or p.name[len(prefix):] in (".tar.gz", ".zip")))

    found = cached()
    if not found:
        log(f"downloading {requirement}")
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        "--disable-pip-version-check", "-d", str(cache), *extra, requirement],
                       check=True)
        found = cached()
    if not found:
        raise SystemExit(f"error: pip downloaded no file named {prefix}* for {requirement}")
    return found[0]


def unpack_release(archive: pathlib.Path, dest: pathlib.Path) -> int:
    """Writes the archive's `.py` files under dest; returns how many."""
    count = 0
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            for member in z.namelist():
                if member.endswith(".py") and ".." not in member.split("/"):
                    target = dest / member
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(z.read(member))
                    count += 1
    else:
        with tarfile.open(archive) as t:
            for member in t.getmembers():
                if member.isfile() and member.name.endswith(".py") and ".." not in member.name.split("/"):
                    target = dest / member.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    source = t.extractfile(member)
                    assert source is not None
                    target.write_bytes(source.read())
                    count += 1
    return count


def repository_git_dir(name: str, cache: pathlib.Path) -> pathlib.Path:
    """A git directory holding the pinned commit: $TPULINT_MIRRORS/<owner>+<name>/repo when that
    exists, otherwise a clone into the cache."""
    slug, commit = ALL_REPOSITORIES[name]
    mirrors = os.environ.get("TPULINT_MIRRORS", "/work/.mirror")
    mirror = pathlib.Path(mirrors) / slug.replace("/", "+") / "repo"
    if mirror.is_dir():
        return mirror
    clone = cache / "git" / slug.replace("/", "+")
    if not clone.is_dir():
        log(f"cloning {slug}")
        subprocess.run(["git", "clone", "--quiet", "--bare", "--filter=blob:none",
                        f"https://github.com/{slug}.git", str(clone)], check=True)
    return clone


def unpack_repository(name: str, cache: pathlib.Path, dest: pathlib.Path) -> int:
    """Writes the `.py` files of the pinned commit under dest; returns how many."""
    _, commit = ALL_REPOSITORIES[name]
    git_dir = repository_git_dir(name, cache)
    dest.mkdir(parents=True, exist_ok=True)
    # Only the `.py` blobs: a mirror may lack its largest (data) files, so no `git archive`.
    listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", commit],
                             check=True, capture_output=True).stdout.decode()
    paths = []
    for entry in listing.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, kind, blob = meta.split()
        if kind == "blob" and mode != "120000" and path.endswith(".py") and ".." not in path.split("/"):
            paths.append((path, blob))
    request = "".join(f"{blob}\n" for _, blob in paths).encode()
    blobs = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch"], input=request,
                           check=True, capture_output=True).stdout
    offset = 0
    count = 0
    for path, _ in paths:
        header_end = blobs.index(b"\n", offset)
        header = blobs[offset:header_end].split()
        offset = header_end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blobs[offset:offset + size])
        offset += size + 1
        count += 1
    return count


def prepare(names: list[str], scratch: pathlib.Path, cache: pathlib.Path = DEFAULT_CACHE) -> dict[str, pathlib.Path]:
    """Unpacks every named code base into scratch/<name>/ (fresh); returns name -> directory."""
    out: dict[str, pathlib.Path] = {}
    for name in names:
        dest = scratch / name
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        if name in {**RELEASES, **HELD_OUT_RELEASES, **HELD_OUT_2_RELEASES, **HELD_OUT_3_RELEASES,
                    **HELD_OUT_4_RELEASES, **HELD_OUT_5_RELEASES, **HELD_OUT_6_RELEASES, **HELD_OUT_7_RELEASES,
                        **HELD_OUT_8_RELEASES, **HELD_OUT_9_RELEASES, **HELD_OUT_10_RELEASES,
                        **HELD_OUT_11_RELEASES, **HELD_OUT_12_RELEASES, **HELD_OUT_13_RELEASES,
                        **HELD_OUT_14_RELEASES, **HELD_OUT_15_RELEASES}:
            count = unpack_release(download_release(name, cache), dest)
        elif name in ALL_REPOSITORIES:
            count = unpack_repository(name, cache, dest)
        else:
            raise SystemExit(f"error: unknown code base {name!r}")
        log(f"{name}: {count} Python files")
        out[name] = dest
    return out
