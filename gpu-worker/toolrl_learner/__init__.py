"""toolrl's learner: model, losses, trainer, checkpoints, ONNX policy export, and its drivers."""

__version__ = "0.1.0"
