"""The ONNX front end: reading a model (model, wire), folding its constants
(fold, through onnxruntime: onnxrt), the graph with its convolutions and what
fuses into them (graph, conv_attrs, activation).  Its modules import the onnx
package absolutely (`import onnx`), never as `from . import`, so this
package's name does not hide it."""
