"""SP 800-90B entropy assessment of a noise source's samples (``rng-certify entropy``).

The section 6.3 non-IID estimators (:mod:`.statistics`, :mod:`.tuples`, :mod:`.predictors`),
the section 3.1.3 combination with the bitstring (:mod:`.non_iid`), the section 5 IID tests
(:mod:`.iid`), the section 3.1.4 restart tests (:mod:`.restart`) and the verdict against a
claimed entropy (:mod:`.assessment`). The estimators agree with NIST's reference tool
(SP800-90B_EntropyAssessment 1.1.7) on its sample files: tests/vectors/sp800_90b.
"""
