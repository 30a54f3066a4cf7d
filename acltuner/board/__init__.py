"""Target boards as data: CPU clusters, ISA and build flags, from YAML files or
detected from a Linux kernel's /proc and /sys."""
from acltuner.board.detect import detect
from acltuner.board.files import dump_yaml, load_file, save_file
from acltuner.board.model import Board, BoardError, Cluster
from acltuner.board.registry import list_boards, load_board

__all__ = ["Board", "BoardError", "Cluster", "detect", "dump_yaml", "list_boards", "load_board",
           "load_file", "save_file"]
