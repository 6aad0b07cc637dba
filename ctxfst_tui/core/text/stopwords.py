"""Stop words: the lists of words that carry no meaning for one purpose, side by side.

They stay separate lists because each purpose drops different words, and two of them are
pinned by outputs: :data:`REFERENCE_STOPWORDS` must stay the CtxFST reference scripts' list
(profiles and graph reproduce them byte for byte; the conformance suite checks it).
"""
from __future__ import annotations

# The general English list: similarity, mention matching, content-word tests.
ENGLISH_STOPWORDS = frozenset("""
a about above after again against all almost also although always am among an and another any anyone
anything are around as at be became because been before being below between both but by can cannot
could did do does doing done down during each either else enough etc even ever every few for from
further get gets got had has have having he her here hers him his how however i if in into is it its
itself just least less let like made make makes many may me might more most much must my near need
needs neither never no nor not now of off often on once one only onto or other others our ours out
over own per perhaps quite rather really said same say says see seen several shall she should since
so some something still such than that the their theirs them then there these they thing things this
those though through thus to too toward under until up upon us use used uses using very via was way
we well were what whatever when where whether which while who whom whose why will with within without
would yet you your yours
""".split())

# The reference ``build_entity_profiles.py`` / ``build_entity_graph.py`` list, exactly.
REFERENCE_STOPWORDS = frozenset(
    "a an and are as at be by for from in is it its of on or that the their "
    "this to with".split()
)

# Function words skipped when the initials of a name are taken ("Bureau of Labor" -> "BL").
ACRONYM_SKIPPED_WORDS = frozenset({"of", "and", "for", "the", "as", "from", "to", "in", "on", "with", "a", "an", "by"})

# Words of four letters or more that say nothing in a retrieval note (the English function
# words plus what every note says: chunk, section, document, describes, mentions...).
NOTE_FILLER_WORDS = frozenset("""
about above after again against also although among another because been before being below between both
cannot could does doing down during each either else even every from further have having here however into
itself just more most much must need needs only other over part same should since some such than that their
them then there these they this those through under until upon very what when where whether which while
will with within without would your yours also helps help applies apply used uses using make makes made
lists list covers cover names name mentions mention says describes describe explains explain including well
like chunk section document note shows show gives give
""".split())

# Capitalised words that are never names (sentence starters, pronouns, titles, labels, months),
# in English and Portuguese: a summary may not "invent" them.
NAME_STOPWORDS = frozenset(
    """
    a an the and but or nor for so yet if then than when while whilst where whence wherever whenever after before
    as at by from in into of off on onto out over to up upon with within without about above across against
    along among around because beside besides between beyond during except inside near since through throughout
    till under until unto via though although however therefore thus hence meanwhile moreover nevertheless
    still also even only just soon later later, finally first second third next last once twice now here there
    this that these those it its he him his she her hers they them their theirs we us our ours you your yours
    i me my mine myself yourself himself herself itself ourselves themselves who whom whose which what why how
    all any both each every either neither no none not some such many much more most few other another one two
    three four five six seven eight nine ten is are was were be been being am has have had do does did will
    would shall should may might must can could yes oh ah alas well indeed perhaps nothing everything someone
    something anyone anything everyone everybody nobody somebody
    mr mrs ms miss sir madam madame lady lord dr doctor master mistress captain colonel general lieutenant
    sergeant major king queen prince princess duke duchess count countess baron baronet father mother sister
    brother uncle aunt monsieur mademoiselle señor señora dom dona senhor senhora sr sra srta
    chapter letter scene part book volume summary story novel narrator prologue epilogue
    o a os as um uma uns umas e mas ou se quando enquanto onde como porque que quem qual de do da dos das em no
    na nos nas por pelo pela para com sem sobre entre ele ela eles elas eu tu nós vós você vocês seu sua seus
    suas meu minha este esta esse essa isso isto aquele aquela depois antes então também ainda já não sim
    capítulo cena parte livro carta resumo
    english french german italian spanish portuguese swiss european american christian catholic protestant
    january february march april may june july august september october november december monday tuesday
    wednesday thursday friday saturday sunday god heaven
    """.split()
)
HONORIFICS = frozenset("mr mrs ms miss sir madam madame lady lord dr captain colonel general king queen".split())
