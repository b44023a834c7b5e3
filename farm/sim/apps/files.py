"""Files (DocumentsUI): browse the phone's real storage under /sdcard, create folders and text files in it."""

from __future__ import annotations

import os
import posixpath
import shutil

from farm.sim import rootfs
from farm.sim.apps.base import App, Bounds, Frame, ListItem, Node, button, label, split_h, title_bar
from farm.sim.apps.forms import Dialog, Field, delete_dialog, list_screen, two_line_row

ROOT = "/sdcard"


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


class FilesApp(App):
    """Directory listing (folders first); 新建文件夹 makes a real directory on the phone, 新建文本文件 a real file
    holding the typed content (UTF-8, exactly as typed)."""

    package = "com.android.documentsui"
    activity = ".files.FilesActivity"
    cwd = ROOT
    dialog: str | None = None
    """The open dialog: `folder` or `file`."""
    selected: str | None = None
    confirm_delete = False

    def entries(self) -> list[tuple[str, bool, int]]:
        """(name, is_dir, size) in the current directory; symlinks are shown as files, never followed."""
        try:
            host = self.phone.host_path(self.cwd)
            with os.scandir(host) as it:
                found = [(e.name, e.is_dir(follow_symlinks=False), _entry_size(e)) for e in it]
        except (OSError, ValueError):
            return []
        return sorted(found, key=lambda e: (not e[1], e[0].lower()))

    def back(self) -> bool:
        if self.dialog:
            self.cancel_dialog()
            return True
        if self.confirm_delete or self.selected is not None:
            self.confirm_delete, self.selected = False, None
            return True
        if self.cwd != ROOT:
            self.cwd = posixpath.dirname(self.cwd)
            self.scroll.pop("files", None)
            return True
        return False

    def go_up(self) -> None:
        self.back()

    def cancel_dialog(self) -> None:
        self.dialog, self.focus = None, None

    def open_dir(self, name: str) -> None:
        if self.selected is not None:
            self.selected = name
            return
        self.cwd = posixpath.join(self.cwd, name)
        self.scroll.pop("files", None)

    def select(self, name: str) -> None:
        self.selected = name

    def ask_delete(self) -> None:
        self.confirm_delete = self.selected is not None

    def clear_selection(self) -> None:
        self.selected, self.confirm_delete = None, False

    def delete_selected(self) -> None:
        name = self.selected
        self.clear_selection()
        if not name:
            return
        try:
            # The entry itself: a symlink is removed, never the directory it points to.
            target = self.phone.host_path(posixpath.join(self.cwd, name), follow=False)
            if target == self.phone.root:
                raise PermissionError(name)
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()
        except (OSError, ValueError):
            self.ui.toast("无法删除")
            return
        self.ui.toast(f"已删除“{name}”")

    def ask_folder(self) -> None:
        self.dialog = "folder"
        self.start_form("folder")

    def ask_file(self) -> None:
        self.dialog = "file"
        self.start_form("file_name", "file_content")

    def create_folder(self) -> None:
        name = self.fields.get("folder", "").strip()
        if not name or "/" in name or name in (".", ".."):
            self.ui.toast("文件夹名称无效")
            return
        try:
            target = self.phone.host_path(posixpath.join(self.cwd, name))
            target.mkdir(parents=False, exist_ok=False)
        except FileExistsError:
            self.ui.toast("已存在同名文件夹")
            return
        except (OSError, ValueError):
            self.ui.toast("无法创建文件夹")
            return
        self.cancel_dialog()
        self.ui.toast(f"已创建文件夹“{name}”")

    def create_file(self) -> None:
        """A new regular file in the current folder holding the typed content; never replaces an entry."""
        name = self.fields.get("file_name", "").strip()
        if not name or "/" in name or name in (".", ".."):
            self.ui.toast("文件名称无效")
            return
        try:
            target = self.phone.host_path(posixpath.join(self.cwd, name), follow=False)
            with rootfs.open_write(target, exclusive=True) as handle:
                handle.write(self.fields.get("file_content", "").encode("utf-8"))
        except FileExistsError:
            self.ui.toast("已存在同名文件")
            return
        except (OSError, ValueError):
            self.ui.toast("无法创建文件")
            return
        self.cancel_dialog()
        self.ui.toast(f"已创建文件“{name}”")

    def enter(self) -> None:
        if self.dialog == "folder":
            self.create_folder()
        elif self.dialog == "file" and self.focus == "file_name":
            self.focus = "file_content"
        elif self.dialog == "file" and self.focus == "file_content":
            self.fields["file_content"] = self.fields.get("file_content", "") + "\n"

    def view(self, frame: Frame) -> list[Node]:
        title = "内部存储" if self.cwd == ROOT else posixpath.basename(self.cwd)
        nodes = title_bar(self, frame, title, None if self.cwd == ROOT else self.go_up)
        crumbs = label(frame.take(40), self.cwd.replace(ROOT, "内部存储", 1), rid=self.rid("breadcrumb"))
        new_row = frame.take(56)
        nodes.append(crumbs)
        if self.selected is None:
            dir_b, file_b = split_h(new_row, [1, 1])
            nodes.append(button(dir_b, "新建文件夹", self.ask_folder, rid=self.rid("action_menu_create_dir")))
            nodes.append(button(file_b, "新建文本文件", self.ask_file, rid=self.rid("action_menu_create_file")))
        else:
            sel_b, del_b, clear_b = split_h(new_row, [2, 1, 1])
            nodes.append(label(sel_b, f"已选择“{self.selected}”", rid=self.rid("selection_title")))
            nodes.append(button(del_b, "删除", self.ask_delete, rid=self.rid("action_menu_delete")))
            nodes.append(button(clear_b, "取消", self.clear_selection, rid=self.rid("action_menu_clear")))
        entries = self.entries()
        nodes = list_screen(self, frame, nodes, "files", [self._item(*e) for e in entries], "dir_list",
                            empty="没有任何文件", empty_rid="message")
        if self.dialog == "folder":
            nodes.append(self._dialog(frame))
        elif self.dialog == "file":
            nodes.append(self._file_dialog(frame))
        if self.confirm_delete and self.selected is not None:
            nodes.append(self._delete_dialog(frame, self.selected))
        return nodes

    def _item(self, name: str, is_dir: bool, size: int) -> ListItem:
        def build(bounds: Bounds) -> Node:
            detail = "文件夹" if is_dir else _size(size)
            tap = (lambda: self.open_dir(name)) if is_dir else (lambda: self.tap_file(name))
            item = two_line_row(self, bounds, (name, "android:id/title"), (detail, "details"), tap, rid="item_root",
                                ratio=(3, 5))
            item.long_clickable, item.on_long_tap = True, lambda: self.select(name)
            item.selected = self.selected == name
            return item

        return ListItem(72, build)

    def tap_file(self, name: str) -> None:
        if self.selected is not None:
            self.selected = name

    def _delete_dialog(self, frame: Frame, name: str) -> Node:
        return delete_dialog(self, frame.dp(400), frame.dp(560), name, self.clear_selection, self.delete_selected)

    def _dialog(self, frame: Frame) -> Node:
        top = frame.dp(400)
        dialog = Dialog(self, top, top + frame.dp(200))
        dialog.text(56, "新建文件夹", "android:id/alertTitle")
        dialog.field(Field("folder", "文件夹名称", "android:id/text1"))
        return dialog.close(self.cancel_dialog, "确定", self.create_folder)

    def _file_dialog(self, frame: Frame) -> Node:
        top = frame.dp(400)
        dialog = Dialog(self, top, top + frame.dp(360))
        dialog.text(56, "新建文本文件", "android:id/alertTitle")
        dialog.field(Field("file_name", "文件名称(如 备忘.txt)", "file_name"))
        dialog.field(Field("file_content", "文件内容", "file_content", height_dp=160))
        return dialog.close(self.cancel_dialog, "确定", self.create_file)


def _entry_size(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat(follow_symlinks=False).st_size
    except OSError:
        return 0
