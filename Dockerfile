# Palui: slim image, non-root, `palui run` (which migrates the database first).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY palui ./palui
COPY migrations ./migrations
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    PALUI_DATA_DIR=/data \
    PALUI_CONFIG=/config/palui.toml \
    PALUI_HTTP_HOST=0.0.0.0 \
    PALUI_LOG_FORMAT=json
# bubblewrap: the sandbox of palui__run_code ([run_code] in palui.toml, off by default). It needs
# user namespaces, which Docker's default seccomp profile refuses: `palui doctor` says so, and the
# tool is then not offered.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /install /usr/local
COPY config/palui.example.toml /config/palui.toml
RUN useradd --system --uid 10001 --home-dir /data --create-home palui \
    && chown -R palui /data
USER palui
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
CMD ["palui", "run"]
