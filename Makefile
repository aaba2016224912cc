# Developer shortcuts; the README's two commands do not need make.
.PHONY: run test openapi container

# The local all-in-one: SQLite, simulated devices, a Temporal dev server child if none answers.
run:
	cargo run -- dev

test:
	./scripts/test

# Regenerate the committed OpenAPI document from the code.
openapi:
	cargo run -q -- openapi > openapi/openapi.json

# Image tagged with version, timestamp and git hash.
container:
	docker build -t flow:$$(cargo pkgid | sed 's/.*[#@]//')-$$(date -u +%Y%m%d%H%M%S)-$$(git rev-parse --short HEAD) .
