/** The example of TensorRT-LLM's docs and README (disagg_config.yaml), shared by the config tests. */
export const README_EXAMPLE = `
hostname: localhost
port: 8000
backend: pytorch
context_servers:
  num_instances: 2
  urls: ["localhost:8001", "localhost:8002"]
generation_servers:
  num_instances: 1
  urls: ["localhost:8003"]
`;
