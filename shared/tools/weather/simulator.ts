// A deterministic weather simulator: the same place on the same date always gets the same report,
// so rewards over weather answers are reproducible without a network.
import { createHash } from 'node:crypto';

export interface WeatherReport {
  location: string;
  date: string;
  condition: string;
  temperature: number;
  units: 'celsius' | 'fahrenheit';
  humidity: number;
  wind_kph: number;
  source: string;
}

const CONDITIONS = ['sunny', 'partly cloudy', 'cloudy', 'light rain', 'rain', 'thunderstorm', 'fog', 'snow'];

export function simulateWeather(
  location: string,
  date: Date,
  units: 'celsius' | 'fahrenheit',
): WeatherReport {
  const place = location.trim().replace(/\s+/g, ' ');
  const day = date.toISOString().slice(0, 10);
  // Case and spacing do not change the place; the date is the UTC calendar day.
  const digest = createHash('sha256').update(`${place.toLowerCase()}|${day}`).digest();
  const u = (i: number) => digest.readUInt16BE(i) / 0xffff; // uniform in [0, 1]
  let condition = CONDITIONS[Math.floor(u(0) * CONDITIONS.length) % CONDITIONS.length] ?? 'sunny';
  const celsius = Math.round(-10 + u(2) * 45); // -10 .. 35 °C
  if (condition === 'snow' && celsius > 2) condition = 'light rain';
  return {
    location: place,
    date: day,
    condition,
    temperature: units === 'celsius' ? celsius : Math.round((celsius * 9) / 5 + 32),
    units,
    humidity: Math.round(20 + u(4) * 75),
    wind_kph: Math.round(u(6) * 40),
    source: 'simulated',
  };
}
