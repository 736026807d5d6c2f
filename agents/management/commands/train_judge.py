"""Fine-tune the contradiction judge on the project's labelled statement pairs and ship it (reproducible:
fixed seed; prints validation precision / recall and the reliability table)."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agents.judge_training import CorpusError, TrainSettings, train
from articles.embeddings import model_dir

DEFAULT_CORPUS = Path(settings.BASE_DIR) / "bench" / "data" / "claim-pairs" / "src"


class Command(BaseCommand):
    help = "Train the contradiction judge (MiniLM cross-encoder) and write its ONNX artefact."

    def add_arguments(self, parser):
        parser.add_argument("--corpus", nargs="+", type=Path, default=[DEFAULT_CORPUS],
                            help="JSON Lines files or folders of labelled statement pairs")
        parser.add_argument("--out", type=Path, default=None, help="artefact folder (default: JUDGE_DIR)")
        parser.add_argument("--seed", type=int, default=TrainSettings.seed)
        parser.add_argument("--epochs", type=int, default=TrainSettings.epochs)
        parser.add_argument("--batch-size", type=int, default=TrainSettings.batch_size)
        parser.add_argument("--learning-rate", type=float, default=TrainSettings.learning_rate)
        parser.add_argument("--validation-share", type=float, default=TrainSettings.validation_share)

    def handle(self, *args, **options):
        out = options["out"] or (Path(settings.JUDGE_DIR) if settings.JUDGE_DIR else None)
        if out is None:
            raise CommandError("--out: give the artefact folder (JUDGE_DIR is empty)")
        for path in options["corpus"]:
            if not Path(path).exists():
                raise CommandError(f"--corpus: no file or folder at {path}")
        if not 0 < options["validation_share"] < 1:
            raise CommandError("--validation-share: give a share between 0 and 1")
        if options["epochs"] < 1:
            raise CommandError("--epochs: at least 1")
        run = TrainSettings(seed=options["seed"], epochs=options["epochs"], batch_size=options["batch_size"],
                            learning_rate=options["learning_rate"], validation_share=options["validation_share"])
        try:
            card = train(corpus=options["corpus"], base_model=model_dir(), out_dir=out, settings=run,
                         log=self.stdout.write)
        except CorpusError as exc:
            raise CommandError(f"--corpus: {exc}") from None
        self.stdout.write(format_card(card))
        self.stdout.write(f"judge written to {out}")


def format_card(card: dict) -> str:
    lines = [f"validation ({card['validation_pairs']} pairs, businesses unseen in training; labels: the written pairs):"]
    for subset in ("all", "non_numeric"):
        scores = card["validation"][subset]
        lines.append(f"  {subset}: accuracy {scores['accuracy']:.3f}")
        for label, row in scores["labels"].items():
            lines.append(f"    {label:16} P {row['precision']:.3f}  R {row['recall']:.3f}  F1 {row['f1']:.3f}"
                         f"  (n={row['support']})")
    for batch, scores in card["validation"].get("by_batch", {}).items():
        row = scores["labels"]["contradicts"]
        lines.append(f"  batch {batch}: accuracy {scores['accuracy']:.3f}; contradicts P {row['precision']:.3f}"
                     f"  R {row['recall']:.3f}  F1 {row['f1']:.3f}  (n={row['support']})")
    mined = card["validation"].get("mined")
    if mined:
        lines.append(f"  mined (pairs as the detector aligns them; {mined['contradicts']} contradictions, {mined['not']} not): "
                     f"contradicts P {mined['precision']:.3f}  R {mined['recall']:.3f}  F1 {mined['f1']:.3f}")
    lines.append("  reliability (contradiction score -> observed share of contradictions):")
    for row in card["reliability"]:
        lines.append(f"    {row['bin']}  pairs {row['pairs']:5}  mean score {row['mean_score']:.3f}"
                     f"  contradicts {row['contradicts']:.3f}")
    calibration = card["calibration"]
    lines.append(f"  0.9-precision point: score >= {calibration['high_precision_score']:.3f}; "
                 f"reported from {calibration['report_score']:.3f}; "
                 f"settled apart (0.98 precision) from {calibration['settle_score']:.3f}")
    return "\n".join(lines)
