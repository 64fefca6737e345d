# DGX Spark lab stand-in for the TensorRT-LLM LLM API backend's model.py (tensorrt_llm/triton_backend/
# all_models/llmapi/tensorrt_llm/1/model.py of the release). Nothing here runs: the lab's tritonserver
# (/opt/tritonserver-standin/triton_standin) plays this model itself. Like the real one it reads model.yaml
# next to this file (or $LLM_CONFIG_PATH): triton_config decides decoupled mode, every other key is an
# argument of tensorrt_llm.LLM(...), and requests are answered with text_output and, on request, the perf
# metrics (as strings).
