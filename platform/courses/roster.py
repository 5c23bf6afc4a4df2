"""A module's roster: who learns, teaches and reviews it (its Enrollment rows).

`module_member_set` is the one way a member is added or given another role, whether by the
authoring page, the API, a CSV roster or `issue_token`; `module_member_join` the way in of
someone who joins by themselves (an enrolment link: it never changes a member's role);
`module_member_remove` the one way out. Setting and removing keep the module's last
instructor: a change that would leave a module that has instructors with none is a
Conflict (409). Roster changes of one module are serialised by a row lock on the module,
so two concurrent removals cannot each leave "the other one".

A CSV roster (one column `username`, optional `email` and `role`) is validated whole before
anything is written, and applied all or nothing; each problem names its line. What it
stores is stored as given (a CSV is input: neutralising formulas is the job of whoever
writes a CSV out), but a cell that is not valid text (a control character, a noncharacter)
is refused, and a file that is not UTF-8 is refused.
"""

from __future__ import annotations

import csv
import io
import sys
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import QuerySet

from accounts.models import Enrollment
from accounts.selectors import AnyUser
from common.errors import Conflict, InvalidInput, NotFound
from courses.models import Module

if TYPE_CHECKING:
    from _csv import _reader

INSTRUCTOR = Enrollment.Role.INSTRUCTOR
CSV_COLUMNS = ("username", "email", "role")
CSV_MAX_BYTES = 1_000_000
CSV_MAX_ROWS = 10_000
USERNAME_MAX_LENGTH = 150  # django.contrib.auth's User.username
Problem = tuple[int, str]  # (line, what is wrong there, naming the line)


@dataclass(frozen=True)
class Membership:
    enrollment: Enrollment
    added: bool  # the user was not a member of the module before
    user_created: bool  # the user did not exist before (created with an unusable password)


@dataclass(frozen=True)
class RosterRow:
    line: int  # the line of the CSV file the row ends on (the header is line 1)
    username: str
    email: str
    role: str


@dataclass
class RosterImport:
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    created_users: list[str] = field(default_factory=list)


def module_members(*, module: Module) -> QuerySet[Enrollment]:
    return (
        Enrollment.objects.filter(module=module).select_related("user").order_by("user__username")
    )


def enrollment_set(*, user: AbstractBaseUser, module: Module, role: str) -> Enrollment:
    """The user's role in `module`, set as is (no last-instructor check: seeding, fixtures)."""
    enrollment, _ = Enrollment.objects.update_or_create(
        user=user, module=module, defaults={"role": role}
    )
    return enrollment


def enrollment_set_all_modules(*, user: AbstractBaseUser, role: str) -> list[Enrollment]:
    with transaction.atomic():
        return [enrollment_set(user=user, module=m, role=role) for m in Module.objects.all()]


def module_member_set(
    *, module: Module, username: str, role: str, create: bool = False, email: str = ""
) -> Membership:
    """Adds `username` to the module with `role`, or changes their role. With `create`, a
    missing user is created (with `email`, and an unusable password: they sign in through
    LTI or an administrator sets one); without it a missing user is refused."""
    _role_check(role)
    with transaction.atomic():
        _lock(module)
        user, user_created = _user(username=username, create=create, email=email)
        assert isinstance(user.pk, int)
        current = Enrollment.objects.filter(user_id=user.pk, module=module).first()
        if current is not None and current.role == INSTRUCTOR and role != INSTRUCTOR:
            _keep_an_instructor(module, leaving=user.pk)
        enrollment, added = Enrollment.objects.update_or_create(
            user_id=user.pk, module=module, defaults={"role": role}
        )
    return Membership(enrollment=enrollment, added=added, user_created=user_created)


def module_member_join(*, module: Module, user: AnyUser, role: str) -> Membership:
    """Adds `user` to the module with `role` unless they are a member already: a member
    keeps the role they have (an enrolment link never makes an instructor a learner)."""
    _role_check(role)
    assert isinstance(user.pk, int)
    with transaction.atomic():
        _lock(module)
        enrollment, added = Enrollment.objects.get_or_create(
            user_id=user.pk, module=module, defaults={"role": role}
        )
    return Membership(enrollment=enrollment, added=added, user_created=False)


def module_member_remove(*, module: Module, username: str) -> None:
    """Takes `username` off the module (their submissions stay)."""
    with transaction.atomic():
        _lock(module)
        enrollment = Enrollment.objects.filter(module=module, user__username=username).first()
        if enrollment is None:
            raise NotFound(f"{username!r} is not a member of {module.slug!r}.")
        if enrollment.role == INSTRUCTOR:
            _keep_an_instructor(module, leaving=enrollment.user_id)
        enrollment.delete()


def module_roster_import(*, module: Module, data: bytes, create: bool = False) -> RosterImport:
    """Applies a CSV roster: every row, or (InvalidInput {"csv": ["line N: ..."]}) none."""
    rows, problems = roster_csv_parse(data)
    with transaction.atomic():
        _lock(module)
        before = {e.user.get_username(): e.role for e in module_members(module=module)}
        problems += _roster_problems(module, rows, before=before, create=create)
        if problems:
            raise InvalidInput({"csv": [text for _, text in sorted(problems)]})
        result = RosterImport()
        # Instructors first, so that handing a module over in one file never passes
        # through a moment without an instructor.
        for row in sorted(rows, key=lambda r: r.role != INSTRUCTOR):
            membership = module_member_set(
                module=module, username=row.username, role=row.role, create=create,
                email=row.email,
            )  # fmt: skip
            if membership.user_created:
                result.created_users.append(row.username)
            if membership.added:
                result.added += 1
            elif before[row.username] != row.role:
                result.changed += 1
            else:
                result.unchanged += 1
    return result


def roster_csv_parse(data: bytes) -> tuple[list[RosterRow], list[Problem]]:
    """The good rows of a CSV roster and the problems of the others; InvalidInput when
    the file as a whole is refused (too large, not UTF-8, no header naming username)."""
    if len(data) > CSV_MAX_BYTES:
        raise InvalidInput({"csv": [f"The file is larger than {CSV_MAX_BYTES} bytes."]})
    try:
        text = data.decode("utf-8-sig")  # a spreadsheet's byte order mark is fine
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise InvalidInput({"csv": [f"line {line}: not UTF-8 text."]}) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        columns = _columns(header)
        rows, problems = _rows(reader, columns)
    except csv.Error as error:
        raise InvalidInput({"csv": [f"line {reader.line_num}: {error}."]}) from None
    if not rows and not problems:
        raise InvalidInput({"csv": ["The file has a header and no member."]})
    return rows, problems


def _columns(header: list[str] | None) -> list[str]:
    if header is None:
        raise InvalidInput({"csv": [_expected("The file is empty")]})
    columns = [cell.strip().lower() for cell in header]
    unknown = [c for c in columns if c not in CSV_COLUMNS]
    if unknown or "username" not in columns or len(set(columns)) != len(columns):
        raise InvalidInput({"csv": [_expected(f"line 1: the header is {','.join(header)!r}")]})
    return columns


def _expected(problem: str) -> str:
    return f"{problem}; its first line names the columns: username, and optionally email, role."


def _rows(reader: _reader, columns: list[str]) -> tuple[list[RosterRow], list[Problem]]:
    rows: list[RosterRow] = []
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    for cells in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in cells):
            continue  # a blank line
        if len(rows) + len(problems) >= CSV_MAX_ROWS:
            raise InvalidInput({"csv": [f"More than {CSV_MAX_ROWS} members in one file."]})
        row, row_problems = _row(line, cells, columns)
        if row is not None and row.username in first_line:
            row_problems.append(f"{row.username!r} is on line {first_line[row.username]} too")
        if row_problems:
            problems.append((line, f"line {line}: {'; '.join(row_problems)}."))
        elif row is not None:
            first_line[row.username] = line
            rows.append(row)
    return rows, problems


def _row(line: int, cells: list[str], columns: list[str]) -> tuple[RosterRow | None, list[str]]:
    if len(cells) > len(columns):
        return None, [f"{len(cells)} cells for {len(columns)} columns"]
    values = dict(zip(columns, (cell.strip() for cell in cells), strict=False))
    problems = [f"{name}: {why}" for name, value in values.items() if (why := _not_text(value))]
    if problems:
        return None, problems
    username, email = values.get("username", ""), values.get("email", "")
    role = values.get("role", "").lower() or Enrollment.Role.LEARNER
    if not username:
        problems.append("username: empty")
    if role not in Enrollment.Role.values:
        problems.append(f"role: {role!r} is not one of {', '.join(Enrollment.Role.values)}")
    if email and (why := _email_problem(email)):
        problems.append(f"email: {why}")
    return RosterRow(line=line, username=username, email=email, role=role), problems


def _not_text(value: str) -> str:
    """Why `value` is not valid text ("" when it is)."""
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cs") or _noncharacter(char):
            return f"holds the character U+{ord(char):04X}, which is not text"
    return ""


def _noncharacter(char: str) -> bool:
    code = ord(char)
    return 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE


def _email_problem(email: str) -> str:
    try:
        validate_email(email)
    except ValidationError:
        return f"{email!r} is not an email address"
    return ""


def _username_problem(username: str) -> str:
    if len(username) > USERNAME_MAX_LENGTH:
        return f"longer than {USERNAME_MAX_LENGTH} characters"
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError:
        return f"{username!r} is not a valid username (letters, digits and @ . + - _)"
    return ""


def _roster_problems(
    module: Module, rows: list[RosterRow], *, before: dict[str, str], create: bool
) -> list[Problem]:
    known = set(
        get_user_model()
        .objects.filter(username__in=[row.username for row in rows])
        .values_list("username", flat=True)
    )
    problems: list[Problem] = []
    for row in rows:
        if row.username in known:
            continue
        if not create:
            problem = f"line {row.line}: no user {row.username!r} (create missing users?)."
            problems.append((row.line, problem))
        elif why := _username_problem(row.username):
            problems.append((row.line, f"line {row.line}: username: {why}."))
    after = before | {row.username: row.role for row in rows}
    if INSTRUCTOR in before.values() and INSTRUCTOR not in after.values():
        problems.append((sys.maxsize, _last_instructor(module)))
    return problems


def _role_check(role: str) -> None:
    if role not in Enrollment.Role.values:
        raise InvalidInput({"role": [f"One of {', '.join(Enrollment.Role.values)}."]})


def _user(*, username: str, create: bool, email: str) -> tuple[AbstractBaseUser, bool]:
    users = get_user_model().objects
    user = users.filter(username=username).first()
    if user is not None:
        return user, False
    if not create:
        raise InvalidInput({"username": [f"No user {username!r}."]})
    if why := _username_problem(username):
        raise InvalidInput({"username": [why]})
    if email and (why := _email_problem(email)):
        raise InvalidInput({"email": [why]})
    return users.create_user(username=username, email=email), True  # unusable password


def _lock(module: Module) -> None:
    Module.objects.select_for_update().filter(pk=module.pk).first()


def _keep_an_instructor(module: Module, *, leaving: int) -> None:
    others = Enrollment.objects.filter(module=module, role=INSTRUCTOR).exclude(user_id=leaving)
    if not others.exists():
        raise Conflict(_last_instructor(module))


def _last_instructor(module: Module) -> str:
    return (
        f"This would leave {module.slug!r} without an instructor: "
        "make someone else its instructor first."
    )
