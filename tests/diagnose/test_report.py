"""collsim.diagnose.report: the text of a report: files read and skipped, the machine (seen, assumed), one row
per band, the verdict, the causes with their evidence lines, fix, settling file and source."""
from collsim.diagnose import diagnose
from collsim.diagnose.report import text
from tests.diagnose.cases import DATA, files


def test_text_names_files_machine_bands_verdict_and_causes(tmp_path):
    (tmp_path / "junk.bin").write_bytes(b"\x00\x01")
    report = diagnose(files(DATA / "synthetic" / "sockets_instead_of_ib") + [str(tmp_path / "junk.bin")])
    lines = text(report)
    assert lines[0] == "read: all_reduce.log (nccl-tests), nccl_debug.log (nccl-log)"
    assert lines[1] == f"skipped: file {tmp_path / 'junk.bin'}: not a text file (binary content)"
    assert lines[2].startswith("machine: cluster: 2 node(s) x 8 H100") and "assumed: " in lines[4]
    large = next(line for line in lines if line.startswith("large "))
    b = report["bands"][-1]
    assert f"{b['measured_busbw_GBps']:.3g}" in large and f"{b['ratio']:.2f}" in large and large.endswith("below")
    assert f"verdict: below what this hardware should give (measured / expected {report['ratio']:.2f})" in lines
    top = report["causes"][0]
    i = lines.index(f"1. sockets_instead_of_ib (score {top['score']:g}): inter-node traffic over TCP sockets instead "
                    "of InfiniBand/RoCE verbs")
    assert lines[i + 1].startswith("   evidence nccl_debug.log:7: a channel goes through NET/Socket: node01:")
    n = len(top["evidence"])
    assert [line.split(":")[0].strip() for line in lines[i + 1 + n:i + 4 + n]] == ["fix", "settle", "source"]


def test_text_without_causes_says_which_files_would_tell_more():
    lines = text(diagnose([], "h100-nvlink", [(1 << 30, 5.0)]))
    assert lines[-1].startswith("no cause found in the files; these would tell more: nccl-tests output")
