"""Task generator: finds the convolutions of an ONNX model and merges identical shapes."""
