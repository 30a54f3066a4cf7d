"""`acltuner bench fuzz`: generated and mutated inputs through every door that
reads outside data (ONNX models, plans, records, board and tuner YAML, the
launcher's JSON-lines protocol), counting tracebacks, crashes, hangs and
partial writes."""
