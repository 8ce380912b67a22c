"""The `inkscape` example plugin, written in Python with the wasmgate
Python SDK (`guest-sdk/python/`): the community `inkscape-mcp` server (run
with `uvx inkscape-mcp`) in front of Inkscape 1.0 or newer.

Where Inkscape is looked for, and where its version comes from:
- linux: `inkscape` on PATH, the Flathub build, then the snap. The version
  is read by this plugin's own probe from the install folder the host
  grants: `VERSION` beside the executable, else the newest `<release
  version="…">` of the AppStream file `org.inkscape.Inkscape.appdata.xml`
  beside it. A copy without either is found but its version is unknown, so
  the 1.0 minimum is not met (docs/declarations.md §2).
- darwin: the `Inkscape.app` bundle; its Info.plist gives the version.
- win32: the installer's uninstall entry ("Inkscape"), then the default
  folder; the PE version resource of `inkscape.exe` gives the version.

Built by `cargo xtask plugins` into `target/python-plugins/inkscape/inkscape.wasm`.
"""

import wasmgate_sdk as sdk
from wasmgate_sdk import App, Manifest, Requires, Server, Skill, VersionSource

#: Plugin version (follows the workspace's crates).
VERSION = "0.1.0"
#: The oldest Inkscape whose command line (`--actions`, `--export-filename`)
#: the server relies on.
MIN_VERSION = "1.0"

# Read while componentize-py builds the component, and embedded.
SKILL = Skill.from_file("inkscape", "skills/inkscape/SKILL.md")


class Inkscape(sdk.Plugin):
    def manifest(self):
        return Manifest("inkscape", VERSION).server(
            Server.stdio("inkscape", "uvx")
            .args(["inkscape-mcp"])
            .app(
                App.linux()
                .command("inkscape")
                .flatpak("org.inkscape.Inkscape")
                .snap("inkscape")
                .version(VersionSource.CUSTOM)
            )
            .app(App.darwin().bundle().app_bundle("Inkscape.app").version(VersionSource.PLIST))
            .app(
                App.win32()
                .uninstall_registry("Inkscape", "bin/inkscape.exe")
                .path("%ProgramFiles%/Inkscape/bin/inkscape.exe")
                .version(VersionSource.PE_RESOURCE)
            )
            .requires(Requires.app().min_version(MIN_VERSION))
        ).skill(SKILL)

    def probe_version(self, server, os, grant):
        try:
            return first_line(grant.read_text("VERSION"))
        except sdk.ProbeError as e:
            if not e.not_found:
                raise
        try:
            return appdata_version(grant.read_text("org.inkscape.Inkscape.appdata.xml"))
        except sdk.ProbeError as e:
            if e.not_found:
                return None
            raise


def first_line(text):
    """The first non-empty line, stripped; `None` for an empty file."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None


def appdata_version(xml):
    """The `version` of the first `<release …>` of an AppStream file (the
    newest: AppStream lists releases newest first), found without an XML
    parser."""
    i = xml.find("<release ")
    if i < 0:
        return None
    tag = xml[i : xml.find(">", i) + 1 or len(xml)]
    for quote in ('"', "'"):
        key = "version=" + quote
        j = tag.find(key)
        if j >= 0:
            end = tag.find(quote, j + len(key))
            if end > 0:
                return tag[j + len(key) : end]
    return None


WitWorld = sdk.export(Inkscape)
