// Real weather from an Open-Meteo-compatible provider: geocode the place, then read current conditions.
import { fetchJson } from '../http/fetch-json.ts';
import { ToolFailure } from '../types.ts';
import type { WeatherReport } from './simulator.ts';

export interface OpenMeteoOptions {
  geocodingUrl: string;
  forecastUrl: string;
  signal: AbortSignal;
  maxRetries: number;
  retryBaseMs: number;
}

// WMO weather interpretation codes, grouped.
function describeCode(code: number): string {
  if (code === 0) return 'sunny';
  if (code <= 2) return 'partly cloudy';
  if (code === 3) return 'cloudy';
  if (code === 45 || code === 48) return 'fog';
  if (code >= 51 && code <= 57) return 'drizzle';
  if ((code >= 61 && code <= 67) || (code >= 80 && code <= 82)) return 'rain';
  if ((code >= 71 && code <= 77) || code === 85 || code === 86) return 'snow';
  if (code >= 95) return 'thunderstorm';
  return 'unknown';
}

export async function openMeteoWeather(
  location: string,
  units: 'celsius' | 'fahrenheit',
  o: OpenMeteoOptions,
): Promise<WeatherReport> {
  const http = { signal: o.signal, maxRetries: o.maxRetries, retryBaseMs: o.retryBaseMs };
  const geo = (await fetchJson(
    `${o.geocodingUrl}?${new URLSearchParams({ name: location, count: '1' })}`,
    http,
  )) as {
    results?: Array<{ name: string; latitude: number; longitude: number; country?: string }>;
  };
  const place = geo.results?.[0];
  if (!place) throw new ToolFailure('execution_error', `no place named "${location}" was found`);
  const query = new URLSearchParams({
    latitude: String(place.latitude),
    longitude: String(place.longitude),
    current: 'temperature_2m,relative_humidity_2m,wind_speed_10m,weather_code',
    temperature_unit: units,
    wind_speed_unit: 'kmh',
  });
  const fc = (await fetchJson(`${o.forecastUrl}?${query}`, http)) as {
    current?: {
      time: string;
      temperature_2m: number;
      relative_humidity_2m: number;
      wind_speed_10m: number;
      weather_code: number;
    };
  };
  const c = fc.current;
  if (!c) throw new ToolFailure('http_error', 'the weather provider answered without current conditions');
  return {
    location: place.country ? `${place.name}, ${place.country}` : place.name,
    date: String(c.time).slice(0, 10),
    condition: describeCode(c.weather_code),
    temperature: c.temperature_2m,
    units,
    humidity: c.relative_humidity_2m,
    wind_kph: c.wind_speed_10m,
    source: 'open-meteo',
  };
}
