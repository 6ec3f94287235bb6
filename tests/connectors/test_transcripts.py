"""The transcript readers (archive/connectors/transcripts/): WebVTT, SRT and Zoom's chat text
into TranscriptRead, on real-format fixtures (tests/fixtures/transcripts/) and the shared
Zoom cloud-recording sample; detection against WhatsApp exports both ways; bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from archive.connectors.base import FormatError
from archive.connectors.transcripts import (
    HEAD_BYTES,
    read_transcript,
    read_transcript_file,
    transcript_kind,
)
from archive.connectors.whatsapp.export import WhatsAppReader
from archive.connectors.whatsapp.grammar import looks_like_chat
from meetings.domain import SegmentRecord, TranscriptRead
from tests.connectors.conftest import FIXTURES, SAMPLES

HERE = FIXTURES / "transcripts"
ZOOM_SAMPLE = SAMPLES / "transcripts" / "zoom_cloud_recording.transcript.vtt"
# Real WhatsApp chat texts: the shared samples and the WhatsApp reader's own fixtures.
WHATSAPP_SAMPLES = sorted((SAMPLES / "whatsapp").glob("*.txt")) + sorted(
    (FIXTURES / "whatsapp").glob("*.txt")
)
ZOOM_CHATS = ["meeting_saved_chat_old.txt", "meeting_saved_chat_new.txt", "recording_chat.txt"]


def read(name: str) -> TranscriptRead:
    return read_transcript((HERE / name).read_bytes(), source=name)


def seg(start: int, end: int, text: str, speaker: str = "") -> SegmentRecord:
    return SegmentRecord(start_ms=start, end_ms=end, text=text, speaker=speaker)


# --- detection -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("teams.vtt", "vtt"),
        ("youtube_rolling.vtt", "vtt"),
        ("plain_tags.vtt", "vtt"),
        ("zoom_cloud.vtt", "vtt"),
        ("bad.vtt", "vtt"),
        ("speakers_bom_crlf.srt", "srt"),
        ("film.srt", "srt"),
        ("bad.srt", "srt"),
        ("meeting_saved_chat_old.txt", "zoom_chat"),
        ("meeting_saved_chat_new.txt", "zoom_chat"),
        ("recording_chat.txt", "zoom_chat"),
        ("whatsapp_ios.txt", None),
        ("whatsapp_android.txt", None),
        ("empty.vtt", None),
    ],
)
def test_kind_is_read_from_the_content(name: str, kind: str | None) -> None:
    head = (HERE / name).read_bytes()[:HEAD_BYTES]
    assert transcript_kind(head, name) == kind
    # The name is no more than a hint: renamed, the content still decides.
    assert transcript_kind(head, "upload.bin") == kind


def test_the_shared_zoom_sample_is_webvtt() -> None:
    assert transcript_kind(ZOOM_SAMPLE.read_bytes()[:HEAD_BYTES], "x.txt") == "vtt"


def test_a_headerless_vtt_is_webvtt_only_by_its_name() -> None:
    head = b"00:00:01.000 --> 00:00:02.000\nhello\n"
    assert transcript_kind(head, "talk.vtt") == "vtt"
    assert transcript_kind(head, "talk.srt") == "srt"  # srt reads dot milliseconds too
    found = read_transcript(head, source="talk.vtt")
    assert found.segments == (seg(1000, 2000, "hello"),)
    assert found.problems == (
        "talk.vtt, line 1: no WEBVTT header; read as WebVTT because of its name",
    )


@pytest.mark.parametrize("name", ZOOM_CHATS)
def test_whatsapp_never_takes_a_zoom_chat(name: str, tmp_path: Path) -> None:
    data = (HERE / name).read_bytes()
    assert not looks_like_chat(data[:4096])
    copy = tmp_path / "WhatsApp Chat with Team.txt"  # even named like a WhatsApp export
    copy.write_bytes(data)
    assert not WhatsAppReader().detect(copy)


@pytest.mark.parametrize(
    "path",
    [HERE / "whatsapp_ios.txt", HERE / "whatsapp_android.txt", *WHATSAPP_SAMPLES],
    ids=lambda path: path.name,
)
def test_a_whatsapp_export_is_never_a_zoom_chat(path: Path) -> None:
    data = path.read_bytes()
    assert WhatsAppReader().detect(path)  # the sample is a real WhatsApp export
    assert transcript_kind(data[:HEAD_BYTES], "meeting_saved_chat.txt") is None
    with pytest.raises(FormatError, match="not a transcript WireCat can read"):
        read_transcript(data, source="meeting_saved_chat.txt")


def test_whatsapp_samples_are_there() -> None:
    assert len(WHATSAPP_SAMPLES) >= 5


def test_not_a_transcript_raises_the_readers_format_error() -> None:
    with pytest.raises(FormatError) as raised:
        read_transcript(b"Dear Bob,\nsee you at ten.\n", source="letter.txt")
    assert str(raised.value) == (
        "letter.txt, line 1: not a transcript WireCat can read "
        "(WebVTT .vtt, SubRip .srt or a Zoom chat .txt)"
    )


# --- WebVTT --------------------------------------------------------------------------------


def test_teams_voices_notes_and_guid_identifiers() -> None:
    found = read("teams.vtt")
    assert found.kind == "vtt"
    assert found.language == "en-us"
    assert found.problems == ()
    assert found.segments == (
        seg(3386, 5106, "Good morning, everyone.", "Alice Walker"),
        seg(5106, 8950, "Let's go through the budget first.", "Alice Walker"),
        seg(9200, 11030, "Sure & I have the numbers.", "Bob O'Neil"),
        # Two cues saying the same thing are both kept: Teams does not roll.
        seg(11030, 12000, "Yes.", "Bob O'Neil"),
        seg(12000, 13000, "Yes.", "Bob O'Neil"),
    )


def test_zoom_cloud_recording_names_the_speaker_before_a_colon() -> None:
    found = read("zoom_cloud.vtt")
    assert found.problems == ()
    assert found.segments == (
        seg(50, 1790, "Hi!", "Srijani Ghosh"),
        seg(2070, 4050, "Get this party started.", "Conor Healy"),
        seg(4100, 6000, "Welcome: all of you.", "Dr. Melissa Ko"),
    )


def test_the_shared_zoom_cloud_sample() -> None:
    found = read_transcript_file(ZOOM_SAMPLE)
    assert found.kind == "vtt"
    assert found.problems == ()
    assert len(found.segments) == 102
    assert found.segments[0] == seg(50, 1790, "Hi!", "Srijani Ghosh")
    assert found.segments[7] == seg(
        32520,
        43089,
        "and I'll just do a little bit of walkthrough. But, hey, does anybody have any "
        "questions about what you're seeing right now? Yes, Connor, everything. I have no "
        "idea what I'm looking at.",
        "Dr. Melissa Ko",
    )
    assert found.segments[-1].start_ms == 728760
    assert found.segments[-1].end_ms == 735620
    assert found.segments[-1].speaker == "Conor Healy"
    # Zoom leaves a cue it could not attribute without a name: kept, without a speaker.
    assert found.segments[47] == seg(307300, 307980, "Hmm.")
    assert [n for n, segment in enumerate(found.segments) if not segment.speaker] == [47]
    assert not any(s.speaker and s.text.startswith(s.speaker) for s in found.segments)


def test_youtube_rolling_lines_are_collapsed() -> None:
    found = read("youtube_rolling.vtt")
    assert found.language == "en"
    assert found.problems == ()
    assert found.segments == (
        seg(0, 2350, "hello everyone and welcome"),
        seg(2360, 5120, "to the weekly review"),
        seg(5130, 7900, "today we look at sales"),
        seg(7910, 10000, "and hiring"),
    )


def test_settings_tags_unpadded_hours_and_voices() -> None:
    found = read("plain_tags.vtt")
    assert found.problems == ()
    assert found.segments == (
        seg(126000, 127250, "Unpadded minutes <here>"),  # 02:06.000, &lt; &gt; unescaped
        seg(128000, 130000, "First voice.", "Ann"),  # two voices in one cue: two segments
        seg(128000, 130000, "Second voice.", "Ben"),
        # 1:02:03.000, cue settings, <v.loud>, <c.yellow>, <00:00:01.500>, <i> stripped
        seg(3723000, 3725500, "We start now!", "Mary Jones"),
    )


def test_bad_vtt_cues_are_named_and_the_rest_is_kept() -> None:
    found = read("bad.vtt")
    assert found.segments == (
        seg(1000, 2000, "Fine.", "Ann"),
        seg(3000, 9000, "Overlaps the cues above.", "Ben"),
        seg(5000, 5000, "Ends before it starts.", "Ann"),
        seg(8000, 10000, "Last one.", "Ann"),
    )
    assert found.problems == (
        "bad.vtt, line 12: the timing line '00:00:06,000 -> 00:00:07.000' cannot be read; "
        "that cue was skipped",
        "bad.vtt, cue 2 (line 8): ends (00:00:04.000) before it starts (00:00:05.000); "
        "kept with its end set to its start",
        "bad.vtt: 2 cues start before the cue above ended, the first being cue 4 (line 16); "
        "all were kept, ordered by their start",
    )


def test_a_vtt_without_cues_says_nothing_was_kept() -> None:
    found = read_transcript(b"WEBVTT\n\nNOTE only a note\n", source="x/notes.vtt")
    assert found.kind == "vtt"
    assert found.segments == ()
    assert found.problems == ("notes.vtt: no cue could be read; nothing was kept",)


# --- SRT -----------------------------------------------------------------------------------


def test_srt_bom_crlf_gaps_tags_and_speakers() -> None:
    found = read("speakers_bom_crlf.srt")
    assert found.kind == "srt"
    assert found.problems == ()
    assert found.segments == (
        seg(1000, 2500, "Hello there.", "Alice"),
        seg(2600, 4000, "Hi Alice,\nhow are you?", "Bob"),
        seg(4100, 5000, "Fine, thanks.", "Alice"),  # numbered 7 after 2; <i> stripped
        seg(5000, 6000, "Me too.", "Carol"),  # {\an8} stripped
    )


def test_srt_without_the_speaker_convention_keeps_its_colons() -> None:
    found = read("film.srt")
    assert found.problems == ()
    assert found.segments == (
        seg(1000, 3000, "It was a dark night."),
        seg(3500, 5000, "Note: nobody came."),
        seg(5500, 7000, "- Who's there?\n- Only me."),
    )


def test_bad_srt_blocks_are_named_and_the_rest_is_kept() -> None:
    found = read("bad.srt")
    assert found.segments == (
        seg(1000, 2000, "First."),
        seg(5000, 5000, "Backwards."),
        seg(6000, 7000, "Last."),
    )
    assert found.problems == (
        "bad.srt, line 5: cannot be read as a cue ('2 / 00:00:03,000 -> 00:00:04,000'); "
        "those lines were skipped",
        "bad.srt, cue 3: ends (00:00:04.500) before it starts (00:00:05.000); "
        "kept with its end set to its start",
    )


def test_srt_in_windows_1252_is_read_and_said() -> None:
    data = "1\r\n00:00:01,000 --> 00:00:02,000\r\nCaf\u00e9 ouvert\r\n".encode("cp1252")
    found = read_transcript(data, source="old.srt")
    assert found.segments == (seg(1000, 2000, "Caf\u00e9 ouvert"),)
    assert found.problems == (
        "old.srt, line 3: not UTF-8 text (byte 0xe9); the file was read as Windows-1252",
    )


def test_srt_in_utf16_with_a_bom() -> None:
    data = "1\r\n00:00:01,000 --> 00:00:02,000\r\nBob: hi\r\n".encode("utf-16")
    assert transcript_kind(data, "x.srt") == "srt"
    assert read_transcript(data, source="x.srt").segments == (seg(1000, 2000, "hi", "Bob"),)


# --- Zoom chat -----------------------------------------------------------------------------


def test_zoom_chat_one_line_layout() -> None:
    found = read("meeting_saved_chat_old.txt")
    assert found.kind == "zoom_chat"
    assert found.problems == ()
    assert found.notes == {
        "layout": "one_line",
        "clock": "time_of_day",
        "first_time_of_day": "10:02:31",
    }
    assert found.segments == (
        seg(0, 0, "hello everyone", "Alice Walker"),
        seg(14000, 14000, "hi all, the agenda:\n1. budget", "Bob Lee"),
        seg(30000, 30000, "(privately to Alice Walker) psst", "Bob Lee"),
        seg(49000, 49000, "https://example.com/doc", "Alice Walker"),
    )


def test_zoom_chat_two_line_layout_past_midnight() -> None:
    found = read("meeting_saved_chat_new.txt")
    assert found.problems == ()
    assert found.notes == {
        "layout": "two_lines",
        "clock": "time_of_day",
        "first_time_of_day": "23:59:40",
    }
    assert found.segments == (
        seg(0, 0, "hello everyone", "Alice Walker"),
        seg(18000, 18000, 'Replying to "hello everyone":\nhi!', "Bob Lee"),
        seg(35000, 35000, "(privately to Alice Walker) psst", "Bob Lee"),  # 00:00:15
        seg(82000, 82000, "see https://example.com: the doc", "Alice Walker"),
    )


def test_zoom_cloud_recording_chat_counts_from_the_recording() -> None:
    found = read("recording_chat.txt")
    assert found.notes == {"layout": "recording", "clock": "elapsed"}
    assert found.segments == (
        seg(64000, 64000, "hello from the recording", "Alice Walker"),
        seg(130000, 130000, 'Replying to "hello": yes', "Bob Lee"),
    )


# --- size and emptiness --------------------------------------------------------------------


def test_an_empty_file_is_a_problem_not_a_crash() -> None:
    found = read("empty.vtt")
    assert found == TranscriptRead(
        kind="vtt", problems=("empty.vtt: the file is empty; nothing was kept",)
    )
    with pytest.raises(FormatError, match="the file is empty"):
        read_transcript(b"", source="nothing.txt")


_CUE = "{:02d}:{:02d}:{:02d}.000 --> {:02d}:{:02d}:{:02d}.500\n<v Ann>Line {}.\n\n"


def _cues(count: int) -> bytes:
    parts = ["WEBVTT\n\n"]
    for n in range(count):
        h, m, s = n // 3600, n // 60 % 60, n % 60
        parts.append(_CUE.format(h, m, s, h, m, s, n))
    return "".join(parts).encode()


def test_a_100_mb_transcript_is_read_up_to_the_cap(tmp_path: Path, settings: object) -> None:
    settings.IMPORT_MAX_TRANSCRIPT = 64 * 1024  # type: ignore[attr-defined]
    head = _cues(5000)
    path = tmp_path / "huge.vtt"
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(100 * 1024 * 1024)  # 100 MB on disk; only the cap is read
    found = read_transcript_file(path)
    kept = len(found.segments)
    assert 1000 < kept < 5000
    assert found.segments[-1] == seg(
        (kept - 1) * 1000, (kept - 1) * 1000 + 500, f"Line {kept - 1}.", "Ann"
    )
    last_line = 2 + 3 * kept
    assert found.problems == (
        f"huge.vtt, line {last_line}: the file has 100 MiB, more than 64 KiB "
        "(WIRECAT_IMPORT_MAX_TRANSCRIPT): it was read up to this line, and what follows was "
        "not kept",
    )
    # The same bytes handed over whole are cut the same way.
    whole = read_transcript(head + b"\0" * (100 * 1024 * 1024 - len(head)), source="huge.vtt")
    assert whole.segments == found.segments
    assert whole.problems == found.problems


def test_a_cue_longer_than_the_text_cap_is_kept_whole(settings: object) -> None:
    settings.IMPORT_MAX_TEXT = 20  # type: ignore[attr-defined]
    data = b"WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n<v Ann>one two three four five six seven\n"
    found = read_transcript(data, source="long.vtt")
    assert found.segments == (
        seg(1000, 4000, "one two three four", "Ann"),
        seg(1000, 4000, "five six seven", "Ann"),
    )
    assert found.problems == (
        "long.vtt, the cue at line 3: its text has 33 characters, more than 20 "
        "(WIRECAT_IMPORT_MAX_TEXT); kept whole as 2 segments with the cue's times",
    )


def test_problems_are_bounded() -> None:
    # 200 broken blocks, each followed by a good cue: each is a problem of its own.
    blocks = "".join(
        f"{2 * n}\n00:00:01,000 -> x\nbad\n\n{2 * n + 1}\n00:00:02,000 --> 00:00:03,000\nok\n\n"
        for n in range(200)
    )
    found = read_transcript(blocks.encode(), source="b.srt")
    assert found.segments == (seg(2000, 3000, "ok"),) * 200
    assert len(found.problems) == 52  # 50 listed, the summary of overlaps, the rest counted
    assert found.problems[0] == (
        "b.srt, line 1: cannot be read as a cue ('0 / 00:00:01,000 -> x'); those lines were skipped"
    )
    assert found.problems[50].startswith("b.srt: 199 cues start before the cue above ended")
    assert found.problems[51] == "b.srt: 150 more problems like these were not listed"
