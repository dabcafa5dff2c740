# The service image: `stream worker` (rating pipeline + read API/dashboard) and the other CLI commands.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    WEB_HOST=0.0.0.0

WORKDIR /app
COPY pyproject.toml README.md ./
COPY schemas ./schemas
COPY stream ./stream
RUN pip install . && useradd --system --uid 10001 --home /app stream

USER stream
EXPOSE 6066
ENTRYPOINT ["stream"]
CMD ["worker"]
