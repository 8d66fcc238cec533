#!/usr/bin/env python3
"""bench/cuda/results_table.py on hand-made results: the rows, MFU, the
ratios against each PyTorch mode, dashes and notes for failed or missing
runs, and the page with the date and the device."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, sys.argv.pop(1))  # the folder of results_table.py
import results_table  # noqa: E402


def write(folder, name, obj):
    with open(os.path.join(folder, name), "w") as f:
        json.dump(obj, f)


class ResultsTableTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        write(self.dir, "tessera_mb2.json",
              {"status": "ok", "tokens_per_s": 60000.0, "mfu": 0.4321,
               "device": "NVIDIA H100 80GB HBM3"})
        write(self.dir, "torch_eager_mb2.json",
              {"status": "ok", "tokens_per_s": 40000.0, "mfu": 0.288})
        write(self.dir, "torch_compile_mb2.json",
              {"status": "ok", "tokens_per_s": 75000.0, "mfu": 0.54})
        write(self.dir, "tessera_mb8.json",
              {"status": "oom", "reason": "cuda backend: allocating logits"})
        write(self.dir, "torch_eager_mb8.json",
              {"status": "ok", "tokens_per_s": 50000.0, "mfu": None})
        # torch_compile_mb8.json is missing.

    def test_rows_and_ratios(self):
        lines, notes, device = results_table.build_table(self.dir, [2, 8])
        self.assertEqual(device, "NVIDIA H100 80GB HBM3")
        self.assertEqual(len(lines), 4)  # header, rule, two rows
        self.assertEqual(
            lines[2],
            "| 2 | 60000 | 43.2% | 40000 | 28.8% | 75000 | 54.0% | 1.50x | 0.80x |")
        self.assertEqual(lines[3], "| 8 | — | — | 50000 | — | — | — | — | — |")
        self.assertIn("micro-batch 8, Tessera: oom: cuda backend: allocating "
                      "logits", notes)
        self.assertIn("micro-batch 8, torch.compile: no result", notes)

    def test_page_has_date_device_and_config(self):
        out = os.path.join(self.dir, "RESULTS.md")
        results_table.main(["--results-dir", self.dir, "--micro-batches",
                            "2,8", "--config", "layers 16, hidden 2048",
                            "--date", "2026-11-21 08:00 UTC", "--out", out])
        with open(out) as f:
            page = f.read()
        self.assertIn("- date: 2026-11-21 08:00 UTC", page)
        self.assertIn("- device: NVIDIA H100 80GB HBM3", page)
        self.assertIn("layers 16, hidden 2048", page)
        self.assertIn("| 2 | 60000 |", page)
        self.assertIn("Notes:", page)

    def test_nothing_ran(self):
        lines, notes, device = results_table.build_table(self.dir, [16])
        self.assertIsNone(device)
        self.assertEqual(lines[2], "| 16 | — | — | — | — | — | — | — | — |")
        self.assertEqual(len(notes), 3)


if __name__ == "__main__":
    unittest.main()
