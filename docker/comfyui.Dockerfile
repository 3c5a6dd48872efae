# syntax=docker/dockerfile:1
# Headless ComfyUI for comfy-durable (DESIGN.md §2, §8): ComfyUI at a pinned release tag (its commit is
# verified, so a moved tag fails the build) plus ComfyUI-GGUF at a pinned commit.
#
# The CUDA user-space libraries (cudart, cuBLAS, cuDNN, ...) come with the PyTorch CUDA 12.8 wheels, so the
# small `base` flavour of the CUDA image is enough: it carries the NVIDIA container-runtime settings. The host
# needs the NVIDIA Container Toolkit and a driver that supports CUDA 12.8 (>= 570).
#
# Build context: this directory (docker/). Models are not baked in: mount them read-only at /opt/ComfyUI/models.
FROM nvidia/cuda:12.8.1-base-ubuntu24.04

ARG COMFYUI_REF=v0.33.0
ARG COMFYUI_COMMIT=2f35f4a08176d993cded35dac3332be4f7287f41
ARG COMFYUI_GGUF_COMMIT=795e45156ece99afbc3efef911e63fcb46e6a20d
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128
ARG TORCH_VERSION=2.9.1
ARG TORCHVISION_VERSION=0.24.1
ARG TORCHAUDIO_VERSION=2.9.1

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/venv

# Sources: ComfyUI at the release tag (commit checked), ComfyUI-GGUF fetched by commit.
RUN git clone --depth 1 --branch "${COMFYUI_REF}" https://github.com/comfyanonymous/ComfyUI.git /opt/ComfyUI \
 && actual="$(git -C /opt/ComfyUI rev-parse HEAD)" \
 && if [ "$actual" != "${COMFYUI_COMMIT}" ]; then \
      echo "ComfyUI ${COMFYUI_REF} is ${actual}, expected ${COMFYUI_COMMIT}" >&2; exit 1; \
    fi \
 && gguf=/opt/ComfyUI/custom_nodes/ComfyUI-GGUF \
 && git init -q "$gguf" \
 && git -C "$gguf" remote add origin https://github.com/city96/ComfyUI-GGUF.git \
 && git -C "$gguf" fetch -q --depth 1 origin "${COMFYUI_GGUF_COMMIT}" \
 && git -C "$gguf" checkout -q FETCH_HEAD \
 && test "$(git -C "$gguf" rev-parse HEAD)" = "${COMFYUI_GGUF_COMMIT}" \
 && rm -rf /opt/ComfyUI/.git "$gguf/.git"

# PyTorch first, pinned, from the CUDA 12.8 index; then hold it with a constraints file so ComfyUI's unpinned
# `torch` requirements cannot swap it for another build (a conflict fails the build instead).
RUN pip install --index-url "${TORCH_INDEX_URL}" \
      "torch==${TORCH_VERSION}" "torchvision==${TORCHVISION_VERSION}" "torchaudio==${TORCHAUDIO_VERSION}" \
 && pip freeze | grep -iE '^(torch|torchvision|torchaudio)==' > /opt/torch-constraints.txt \
 && pip install -c /opt/torch-constraints.txt -r /opt/ComfyUI/requirements.txt \
 && pip install -c /opt/torch-constraints.txt -r /opt/ComfyUI/custom_nodes/ComfyUI-GGUF/requirements.txt \
      "gguf>=0.13.0" sentencepiece protobuf

# Run unprivileged. Writable: input/ output/ user/ temp/ (volumes in docker-compose.yml); models/ is mounted read-only.
RUN useradd --create-home --uid 10001 --user-group comfy \
 && mkdir -p /opt/ComfyUI/input /opt/ComfyUI/output /opt/ComfyUI/user /opt/ComfyUI/temp /opt/ComfyUI/models \
 && chown -R comfy:comfy /opt/ComfyUI/input /opt/ComfyUI/output /opt/ComfyUI/user /opt/ComfyUI/temp

USER comfy
WORKDIR /opt/ComfyUI
EXPOSE 8188
CMD ["python", "main.py", "--listen", "0.0.0.0", "--port", "8188"]
