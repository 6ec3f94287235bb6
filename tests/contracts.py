"""The project's own import-linter contract: capabilities and their layers.

One rule for every module, present and future, so a new module is covered without
editing the contract (`pyproject.toml` names the packages, never the modules):

- **Layers.** A module is *delivery* when a part of its dotted name is one of the
  delivery names (views, api, jobs, admin, forms, urls, schemas, management, web,
  templatetags, pages). Anything else is logic or store (services, selectors, models,
  the sink, the search parser, a connector). Logic never imports delivery.
- **Capabilities meet through their public face.** Every package directly inside a
  container (`archive.store`, `archive.tags`, ...) and every app listed as an app
  (`tasks`) is a capability. A module of one capability may import from another only
  that one's public modules (models, services, selectors, schemas, and the connector
  ports), or anything that is not delivery in a foundation capability (the store,
  which every capability writes and reads through).
- Composition modules (the URL table, the one NinjaAPI, the admin and model indexes,
  the Celery app) wire capabilities together and are exempt from the second rule.
"""

from __future__ import annotations

from typing import Any

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def _parts(module: str) -> list[str]:
    return module.split(".")


class CapabilityContract(Contract):
    containers = fields.ListField(subfield=fields.StringField())
    apps = fields.ListField(subfield=fields.StringField(), required=False)
    delivery = fields.ListField(subfield=fields.StringField())
    public = fields.ListField(subfield=fields.StringField())
    foundations = fields.ListField(subfield=fields.StringField(), required=False)
    kits = fields.ListField(subfield=fields.StringField(), required=False)
    composition = fields.ListField(subfield=fields.StringField(), required=False)
    ignore = fields.ListField(subfield=fields.StringField(), required=False)
    delivery_only = fields.ListField(subfield=fields.StringField(), required=False)

    def _is_delivery(self, module: str) -> bool:
        names = set(self.delivery)  # type: ignore[arg-type]
        if module in set(self.composition or []):  # type: ignore[arg-type]
            return True
        return any(part in names for part in _parts(module)[1:])

    def _capability(self, module: str) -> tuple[str, list[str]] | None:
        """(capability, the parts of the name inside it), or None for modules outside any."""
        for app in self.apps or []:  # type: ignore[attr-defined]
            if module == app or module.startswith(app + "."):
                return str(app), _parts(module)[len(_parts(str(app))) :]
        for container in self.containers:  # type: ignore[attr-defined]
            prefix = str(container) + "."
            if module.startswith(prefix):
                rest = _parts(module[len(prefix) :])
                if rest[0] in set(self.kits or []):  # type: ignore[arg-type]
                    return None
                if len(rest) == 1 and not self._is_package(module):
                    return None  # a module beside the capabilities (the models index)
                return prefix + rest[0], rest[1:]
        return None

    def _is_package(self, module: str) -> bool:
        return any(m.startswith(module + ".") for m in self._modules)

    def _ignored(self, module: str) -> bool:
        return any(
            module == name or module.startswith(str(name) + ".")
            for name in self.ignore or []  # type: ignore[attr-defined]
        )

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        self._modules = set(graph.modules)
        roots = {str(c) for c in self.containers} | {str(a) for a in self.apps or []}  # type: ignore[attr-defined]
        roots |= {"wirecat"}
        broken: list[dict[str, Any]] = []
        public = {str(p) for p in self.public}  # type: ignore[attr-defined]
        foundations = {str(f) for f in self.foundations or []}  # type: ignore[attr-defined]
        composition = {str(c) for c in self.composition or []}  # type: ignore[attr-defined]
        only = {str(c) for c in self.delivery_only or []}  # type: ignore[attr-defined]
        for importer in sorted(self._modules):
            if importer.split(".")[0] not in {r.split(".")[0] for r in roots}:
                continue
            if self._ignored(importer):
                continue
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if imported.split(".")[0] in only and not self._is_delivery(importer):
                    broken.append(self._broken(graph, importer, imported, "logic knows Celery"))
                    continue
                if imported.split(".")[0] not in {r.split(".")[0] for r in roots}:
                    continue
                if self._ignored(imported):
                    continue
                reason = ""
                if not self._is_delivery(importer) and self._is_delivery(imported):
                    reason = "logic imports delivery"
                elif importer not in composition:
                    mine, theirs = self._capability(importer), self._capability(imported)
                    if theirs is not None and (mine is None or mine[0] != theirs[0]):
                        inside = theirs[1]
                        is_public = bool(inside) and inside[0] in public
                        if theirs[0] in foundations and not self._is_delivery(imported):
                            is_public = True
                        if not is_public:
                            reason = f"reaches inside {theirs[0]} (not its public face)"
                if reason:
                    broken.append(self._broken(graph, importer, imported, reason))
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    @staticmethod
    def _broken(graph: ImportGraph, importer: str, imported: str, reason: str) -> dict[str, Any]:
        details = graph.get_import_details(importer=importer, imported=imported)
        lines = sorted({d["line_number"] for d in details})
        return {"importer": importer, "imported": imported, "reason": reason, "lines": lines}

    def render_broken_contract(self, check: ContractCheck) -> None:
        for item in check.metadata["broken"]:
            where = ", ".join(f"l.{n}" for n in item["lines"])
            output.print_error(
                f"{item['importer']} imports {item['imported']} ({where}): {item['reason']}",
                bold=False,
            )
        output.new_line()
