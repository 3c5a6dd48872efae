# syntax=docker/dockerfile:1
# comfy-durable: one image for the worker and the HTTP front (`worker` / `api`, see src/cli/main.ts).
# Debian (glibc), not Alpine: @temporalio/core-bridge ships glibc-only prebuilt binaries (musl fails with
# `__register_atfork: symbol not found`). Two stages: the first compiles src/ into dist/ with the workflow
# bundle prebuilt (scripts/build.sh, as `npm start` does); the image runs plain node on dist/, which saves
# tsx's loader and the start-up bundling (docs/benchmarks.md).
FROM node:20.20.2-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.sh ./scripts/build.sh
COPY src ./src
# Then only what runs: production dependencies (tsx stays, for `contract` and the bin wrapper).
RUN bash scripts/build.sh --force \
 && npm prune --omit=dev --no-audit --no-fund --loglevel=error \
 && npm cache clean --force

FROM node:20.20.2-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin

# /data holds the blob store and the options file; a fresh named volume inherits this ownership.
RUN mkdir -p /data && chown node:node /data
# glibc malloc as scripts/run.sh sets it for `npm start` (2 arenas; image-sized buffers mmap'd, so freeing
# one returns it to the OS): tens of MB less RSS idle and under large uploads. The V8 heap flags of the
# ENTRYPOINT are run.sh's too (why: there).
ENV DATA_DIR=/data \
    HOST=0.0.0.0 \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    MALLOC_TRIM_THRESHOLD_=131072

USER node
VOLUME ["/data"]
EXPOSE 7860

# Node runs the compiled CLI directly, as a single process, so SIGTERM from `docker stop` reaches the CLI's
# own handler and in-flight work drains. (bin/comfy-durable.js would put a spawnSync wrapper in front that
# neither handles nor forwards signals.) Same commands as the bin:
#   docker run IMAGE worker | api | contract URL | ...
ENTRYPOINT ["node", "--heap-growing-percent=30", "--max-semi-space-size=2", "dist/cli/main.js"]
CMD ["api"]
