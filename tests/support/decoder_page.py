"""One test program run step by step in the page (tests/browser's ``decoder_page`` fixture
has tests/support/decoder_check.py loaded there): its report, as the native tests get it."""


def decoder_report(page, folder: str, name: str) -> dict:
    """decoder_check's report of tests/fixtures/FOLDER/NAME.pte (and .npz) in the page."""
    return page.run_python(
        f"await decoder_report(await runtime(), "
        f"await fetch_bytes('/fixtures/{folder}/{name}.pte'), "
        f"await fetch_bytes('/fixtures/{folder}/{name}.npz'))")
