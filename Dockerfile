# The harness as a container image, FROM scratch: one static executable (answering to
# harness, platform and customer-kms-sim), a non-root user, /data for databases and reports.
# Nothing is pulled: `bash scripts/build-image.sh [TAG]` builds the executable
# (scripts/build-static.sh) and the context this file expects:
#
#   rootfs/  usr/local/bin/harness, and platform and customer-kms-sim linking to it;
#            etc/passwd and etc/group naming the user; tmp/ (mode 1777)
#   data/    an empty folder, the volume
#
#   docker run --rm -p 8080:8080 -p 8081:8081 voice-harness:dev      # the whole stack
#   docker run --rm voice-harness:dev check byok --help                # any command
FROM scratch
COPY rootfs/ /
COPY --chown=65532:65532 data/ /data/
# HARNESS_HOST, PLATFORM_LISTEN, KMS_SIM_LISTEN: listen on every address of the container,
# so that published ports (-p) and other containers reach the servers.
ENV PATH=/usr/local/bin \
    HOME=/data \
    TMPDIR=/tmp \
    HARNESS_HOST=0.0.0.0 \
    PLATFORM_LISTEN=0.0.0.0:8080 \
    KMS_SIM_LISTEN=0.0.0.0:8700
USER 65532:65532
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080 8081
# `harness ping` GETs HARNESS_PING_URL (default http://127.0.0.1:8080/healthz): no shell or
# curl needed.
HEALTHCHECK --interval=5s --timeout=3s --start-period=1s --retries=3 \
    CMD ["harness", "ping", "--quiet"]
ENTRYPOINT ["harness"]
# The whole stack; at `docker stop` the verdict on its clients is written to /data/report.
CMD ["up", "--report-on-exit", "/data/report"]
