package cryptopay

// RaceDetector tells the external tests whether the race detector is on
// (see raceDetector).
const RaceDetector = raceDetector
