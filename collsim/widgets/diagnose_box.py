"""DiagnoseBox: paste a log or upload files, and see ``collsim diagnose``'s verdict, the expected
curve against the measured one and the ranked causes.

A text area takes pasted text (nccl-tests output, NCCL_DEBUG lines, nvidia-smi topo -m, ibstatus,
env dumps: anything ``collsim diagnose`` reads), the upload button takes files, the cluster box an
optional preset or cluster file, the measured box ``SIZE=BUSBW_GBps`` pairs. **diagnose** runs
``collsim.diagnose.diagnose_text`` on all of it and shows the report's text
(``collsim.diagnose.report.text``) and its figure (``collsim.viz.diagnose.diagnose_figure``).
Anything that goes wrong is one line in the status; the last report stays in ``.report``.
"""
from __future__ import annotations

import html
import io

from collsim.diagnose import diagnose_text
from collsim.diagnose.report import text
from collsim.errors import CollsimError
from collsim.units import parse_size
from collsim.viz.diagnose import diagnose_figure
from collsim.widgets import in_widget

# the CLI's phrases in diagnose's messages, as this box says them
FIELDS = {"give --cluster to": "name a cluster in the cluster box to",
          "give --cluster": "name a cluster in the "
          "cluster box",
          "give files or --measured": "paste a log, upload files or type a busbw in the measured "
                                      "box",
          "--cluster ": "cluster ", "--measured": "measured"}


class DiagnoseBox:
    """The widget (``.widget``); ``run()`` diagnoses what it holds, as the button does."""

    def __init__(self, pasted: str = "", cluster: str = "", measured: str = ""):
        import ipywidgets as W

        self.paste = W.Textarea(value=pasted,
                                placeholder="paste nccl-tests output, NCCL_DEBUG lines, topo -m "
                                            "...",
                                layout=W.Layout(width="100%", height="160px"))
        self.upload = W.FileUpload(multiple=True, description="upload")
        self.cluster = W.Text(value=cluster, description="cluster",
                              placeholder="preset or cluster file (optional)")
        self.measured = W.Text(value=measured, description="measured",
                               placeholder="1G=42.5 8G=45 (optional)")
        self.button = W.Button(description="diagnose", button_style="primary")
        self.status = W.HTML()
        self.text = W.HTML()
        self.image = W.Image(format="png", layout=W.Layout(max_width="760px"))
        self.report = None
        self.button.on_click(lambda _b: self.run())
        self.widget = W.VBox([self.paste,
                              W.HBox([self.upload, self.cluster, self.measured, self.button]),
                              self.status, self.image, self.text])

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)

    def texts(self) -> dict:
        """``{name: text or bytes}`` of the pasted text and the uploaded files."""
        out = {"pasted.log": self.paste.value} if self.paste.value.strip() else {}
        for item in self.upload.value or ():
            out[item["name"]] = bytes(item["content"])
        return out

    def run(self) -> dict | None:
        """Diagnose what the box holds; the report, or None (and the status says why)."""
        try:
            measured = []
            for item in self.measured.value.split():
                size, _, value = item.partition("=")
                measured.append((parse_size(size), float(value)))
            report = diagnose_text(self.texts(), self.cluster.value.strip() or None, measured)
        except (CollsimError, ValueError) as e:
            message = in_widget(str(e).splitlines()[0], FIELDS)
            self.status.value = f"<span style='color:#b00'>{html.escape(message)}</span>"
            return None
        self.report = report
        self.status.value = html.escape(f"verdict: {report['verdict'].replace('_', ' ')}")
        shown = in_widget("\n".join(text(report, top=3)), FIELDS)
        self.text.value = "<pre style='font-size:11px'>" + html.escape(shown) + "</pre>"
        self.image.value = b""
        if report["measured"]:
            import matplotlib.pyplot as plt

            fig = diagnose_figure(report)
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=90)
            plt.close(fig)
            self.image.value = buf.getvalue()
        return report
